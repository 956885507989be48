fn main() {
    for (package, env) in [
        ("misbehave", "MISBEHAVE_COMPONENT"),
        ("asks-on-load", "ASKS_ON_LOAD_COMPONENT"),
    ] {
        let component =
            guest_build::build_component(package, &[&format!("tests/guests/{package}"), "wit"]);
        println!("cargo:rustc-env={env}={}", component.display());
    }
    // The tool from guest/ and the seam plugs from plugs/ as they are now,
    // to hold the checked-in ones to.
    let tool = guest_build::build_component("ask-user-tool", &["guest", "codes", "wit"]);
    println!("cargo:rustc-env=REBUILT_COMPONENT={}", tool.display());
    for plug in ["inbox", "answers", "terminal"] {
        let built = guest_build::build_component(
            &format!("ask-user-plug-{plug}"),
            &[&format!("plugs/{plug}"), "plugs/common", "codes", "wit"],
        );
        println!(
            "cargo:rustc-env=REBUILT_PLUG_{}={}",
            plug.to_uppercase(),
            built.display()
        );
    }
    let face = guest_build::build_component("ask-user-face-wassette", &["faces/wassette", "wit"]);
    println!("cargo:rustc-env=REBUILT_WASSETTE_FACE={}", face.display());
}
