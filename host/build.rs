fn main() {
    let component = guest_build::build_component("ask-user-tool", &["guest", "codes", "wit"]);
    let out =
        std::path::PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("ask_user_tool.wasm");
    std::fs::copy(&component, &out).expect("copying the component");
}
