fn main() {
    let component = guest_build::build_component("misbehave", &["tests/guests/misbehave", "wit"]);
    println!(
        "cargo:rustc-env=MISBEHAVE_COMPONENT={}",
        component.display()
    );
}
