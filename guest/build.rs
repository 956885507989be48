//! The component is `no_std`, so nothing brings libc; the compiler still
//! emits calls to `memcmp` (comparing strings). Link the toolchain's own
//! wasi-libc for it: the linker keeps only the functions that are called.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=-lc");
    }
}
