//! The component's allocator: a bump allocator over the heap the linker
//! lays out in the initial memory, then over pages from `memory.grow`.
//!
//! Every call of the tool runs in a fresh instance, dropped whole when the
//! call ends, so nothing needs to be given back for reuse: an allocation is
//! a pointer moved forward, and a free gives its block back only when it
//! is the newest (a temporary buffer, a string that grows in place). The
//! tool's work allocates little beyond what it keeps (its arguments, their
//! parse, the request, the answers, the rendered result); a string that
//! grows in place while it is the newest block, and moves at most once per
//! doubling otherwise. The largest call the limits allow takes about 5 MiB
//! (with dlmalloc it took about 10 MiB); a test
//! holds it under a quarter of the default cap. With the initial memory
//! sized in `build.rs`, a call of ordinary size never grows its memory.

use core::alloc::{GlobalAlloc, Layout};
use core::arch::wasm32;
use core::cell::Cell;
use core::ptr;

const PAGE: usize = 64 * 1024;

unsafe extern "C" {
    // Laid out by wasm-ld: the heap between the data and the end of the
    // initial memory.
    static __heap_base: u8;
    static __heap_end: u8;
}

/// The global allocator: the next free byte, and the end of the memory it
/// may use without growing.
pub(crate) struct Heap {
    next: Cell<usize>,
    end: Cell<usize>,
}

// SAFETY: the component has one thread, so the heap is never used from two.
unsafe impl Sync for Heap {}

impl Heap {
    pub(crate) const fn new() -> Self {
        Heap {
            next: Cell::new(0),
            end: Cell::new(0),
        }
    }

    /// `size` bytes aligned to `align`, or null when memory cannot grow.
    fn bump(&self, size: usize, align: usize) -> *mut u8 {
        if self.end.get() == 0 {
            // Only the addresses of the linker's symbols are taken.
            self.next.set(&raw const __heap_base as usize);
            self.end.set(&raw const __heap_end as usize);
        }
        let Some(start) = self.next.get().checked_next_multiple_of(align) else {
            return ptr::null_mut();
        };
        let Some(stop) = start.checked_add(size) else {
            return ptr::null_mut();
        };
        if stop > self.end.get() && !self.grow_to(stop) {
            return ptr::null_mut();
        }
        self.next.set(stop);
        start as *mut u8
    }

    /// Grows memory until it reaches `stop`; false when it cannot.
    fn grow_to(&self, stop: usize) -> bool {
        let memory = wasm32::memory_size(0).saturating_mul(PAGE);
        if stop > memory {
            let pages = (stop - memory).div_ceil(PAGE);
            if wasm32::memory_grow(0, pages) == usize::MAX {
                return false;
            }
        }
        self.end.set(wasm32::memory_size(0).saturating_mul(PAGE));
        true
    }

    /// Whether the block at `ptr` of `size` bytes is the newest.
    fn newest(&self, ptr: *mut u8, size: usize) -> bool {
        ptr as usize + size == self.next.get()
    }
}

// SAFETY: every block given is fresh memory no other block overlaps (the
// pointer only moves forward, and back only over the newest block when it
// is freed or shrunk); memory is zeroed at instantiation and a freed block
// is never given again unless it was the newest, so `alloc_zeroed` zeroes
// what it gives.
unsafe impl GlobalAlloc for Heap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        self.bump(layout.size(), layout.align())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let block = self.bump(layout.size(), layout.align());
        if !block.is_null() {
            // Memory given back by the newest block's free may be dirty.
            unsafe { ptr::write_bytes(block, 0, layout.size()) };
        }
        block
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.newest(ptr, layout.size()) {
            self.next.set(ptr as usize);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if self.newest(ptr, layout.size()) {
            // The newest block grows or shrinks where it is.
            let Some(stop) = (ptr as usize).checked_add(new_size) else {
                return ptr::null_mut();
            };
            if stop > self.end.get() && !self.grow_to(stop) {
                return ptr::null_mut();
            }
            self.next.set(stop);
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        let moved = self.bump(new_size, layout.align());
        if !moved.is_null() {
            // SAFETY: both blocks are live and do not overlap.
            unsafe { ptr::copy_nonoverlapping(ptr, moved, layout.size()) };
        }
        moved
    }
}
