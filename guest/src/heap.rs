//! The component's allocator: dlmalloc, fed first with the heap the linker
//! lays out in the initial memory, then with pages from `memory.grow`.
//!
//! dlmalloc's own wasm backend uses the linker's heap only on
//! `wasm32-unknown-unknown`; on `wasm32-wasip2` it grows memory for its
//! first block, so every call grew its fresh instance by a page, and the
//! host paid two `mprotect`s (and the TLB shootdowns they bring) to grow the
//! memory and shrink it back for the next instance. With the initial memory
//! sized in `build.rs`, a call of ordinary size never grows it.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::{Cell, UnsafeCell};
use core::ptr;

use dlmalloc::Dlmalloc;

const PAGE: usize = 64 * 1024;

unsafe extern "C" {
    // Laid out by wasm-ld: the heap between the data and the end of the
    // initial memory.
    static __heap_base: u8;
    static __heap_end: u8;
}

/// dlmalloc's source of memory.
struct Pages {
    /// The linker's heap was given out.
    donated: Cell<bool>,
}

// SAFETY: dlmalloc needs its system allocator `Send`; the component has one
// thread.
unsafe impl Send for Pages {}

// SAFETY: `alloc` returns regions no one else uses: the linker's heap once,
// then fresh pages from `memory.grow`; both are zeroed at instantiation.
// Nothing is ever given back (a call's instance is dropped whole).
unsafe impl dlmalloc::Allocator for Pages {
    fn alloc(&self, size: usize) -> (*mut u8, usize, u32) {
        if !self.donated.replace(true) {
            // Only the addresses of the linker's symbols are taken.
            let (base, end) = (
                &raw const __heap_base as usize,
                &raw const __heap_end as usize,
            );
            if end > base && end - base >= size {
                return (base as *mut u8, end - base, 0);
            }
        }
        let pages = size.div_ceil(PAGE);
        match wasm32::memory_grow(0, pages) {
            usize::MAX => (ptr::null_mut(), 0, 0),
            previous => ((previous * PAGE) as *mut u8, pages * PAGE, 0),
        }
    }

    fn remap(&self, _: *mut u8, _: usize, _: usize, _: bool) -> *mut u8 {
        ptr::null_mut()
    }

    fn free_part(&self, _: *mut u8, _: usize, _: usize) -> bool {
        false
    }

    fn free(&self, _: *mut u8, _: usize) -> bool {
        false
    }

    fn can_release_part(&self, _: u32) -> bool {
        false
    }

    fn allocates_zeros(&self) -> bool {
        true
    }

    fn page_size(&self) -> usize {
        PAGE
    }
}

/// The global allocator.
pub(crate) struct Heap(UnsafeCell<Dlmalloc<Pages>>);

// SAFETY: the component has one thread, so the heap is never used from two.
unsafe impl Sync for Heap {}

impl Heap {
    pub(crate) const fn new() -> Self {
        Heap(UnsafeCell::new(Dlmalloc::new_with_allocator(Pages {
            donated: Cell::new(false),
        })))
    }
}

// SAFETY: each method forwards to dlmalloc with the layout Rust gave, and
// one thread means no call overlaps another.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).malloc(layout.size(), layout.align()) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe { (*self.0.get()).calloc(layout.size(), layout.align()) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { (*self.0.get()).free(ptr, layout.size(), layout.align()) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe { (*self.0.get()).realloc(ptr, layout.size(), layout.align(), new_size) }
    }
}
