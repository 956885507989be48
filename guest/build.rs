//! How the component is linked. It is `no_std`, so nothing brings libc; the
//! compiler still emits calls to `memcmp` (comparing strings): link the
//! toolchain's own wasi-libc for it (the linker keeps only the functions
//! that are called). And its initial memory has room for a call's heap.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        println!("cargo:rustc-link-arg=-lc");
        // 20 pages: the 1 MiB stack, the data, and about 230 KB of heap
        // (`heap.rs`), so a call of ordinary size never grows its memory.
        println!("cargo:rustc-link-arg=--initial-memory={}", 20 * 64 * 1024);
    }
}
