//! A global allocator that counts the heap's growth while a measurement is on.
//!
//! Between [`start`] and [`stop`] every allocation adds its size and every
//! release subtracts it, so the running sum is the heap's growth since
//! [`start`]; [`stop`] returns the highest it reached. Outside a measurement
//! the allocator only reads one flag.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};

/// `System`, counting while a measurement is on.
pub struct CountingAllocator;

static ON: AtomicBool = AtomicBool::new(false);
static CURRENT: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static CALLS: AtomicIsize = AtomicIsize::new(0);

fn grew(bytes: usize) {
    if ON.load(Ordering::Relaxed) {
        CALLS.fetch_add(1, Ordering::Relaxed);
        let now = CURRENT.fetch_add(bytes as isize, Ordering::Relaxed) + bytes as isize;
        PEAK.fetch_max(now, Ordering::Relaxed);
    }
}

fn shrank(bytes: usize) {
    if ON.load(Ordering::Relaxed) {
        CURRENT.fetch_sub(bytes as isize, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` unchanged; only counters are added.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                shrank(layout.size() - new_size);
            }
        }
        new
    }
}

/// Starts a measurement: the growth counts from zero.
pub fn start() {
    CURRENT.store(0, Ordering::Relaxed);
    CALLS.store(0, Ordering::Relaxed);
    PEAK.store(0, Ordering::Relaxed);
    ON.store(true, Ordering::SeqCst);
}

/// Ends the measurement and returns the peak growth in bytes.
pub fn stop() -> usize {
    ON.store(false, Ordering::SeqCst);
    PEAK.load(Ordering::Relaxed).max(0) as usize
}

/// The growth still allocated when [`stop`] was called (what the measured
/// code left behind: in memory, the rows it stored), read after it.
pub fn retained() -> usize {
    CURRENT.load(Ordering::Relaxed).max(0) as usize
}

/// The allocations (calls that grew the heap) since [`start`], read after [`stop`].
pub fn allocations() -> usize {
    CALLS.load(Ordering::Relaxed).max(0) as usize
}

/// The heap's growth from [`start`] to [`stop`] (what was still held at
/// the end), read after [`stop`].
pub fn current() -> usize {
    CURRENT.load(Ordering::Relaxed).max(0) as usize
}
