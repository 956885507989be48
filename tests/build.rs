fn main() {
    for (package, env) in [
        ("misbehave", "MISBEHAVE_COMPONENT"),
        ("asks-on-load", "ASKS_ON_LOAD_COMPONENT"),
    ] {
        let component =
            guest_build::build_component(package, &[&format!("tests/guests/{package}"), "wit"]);
        println!("cargo:rustc-env={env}={}", component.display());
    }
    // The tool from guest/ as it is now, to hold the checked-in one to.
    let tool = guest_build::build_component("ask-user-tool", &["guest", "codes", "wit"]);
    println!("cargo:rustc-env=REBUILT_COMPONENT={}", tool.display());
}
