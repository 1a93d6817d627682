//! The heap in use, as the memory figures read it. The `weft` binary's
//! allocator is mimalloc, which keeps no running total of the bytes it has
//! handed out, so the binary wraps it in [`Counting`]: while a measurement
//! counts (from [`HeapProbe::start`] until the probe is dropped), every
//! allocation and free adjusts one counter. Counting is off otherwise, so timed work pays one relaxed load
//! per allocation. Where the wrapper is not the global allocator (tests,
//! other binaries), glibc's own counters (`mallinfo2`) answer instead.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Counting is on.
static ON: AtomicBool = AtomicBool::new(false);

/// Bytes requested and not freed while counting was on, offset so that
/// frees of older blocks never take it below zero.
static BYTES: AtomicU64 = AtomicU64::new(OFFSET);

const OFFSET: u64 = 1 << 62;

/// A global allocator that counts the bytes `A` hands out while counting
/// is on.
#[derive(Debug, Default)]
pub struct Counting<A>(pub A);

/// Turns counting on; `true` when [`Counting`] is the global allocator (a
/// test allocation moved the counter), else counting stays off.
fn start() -> bool {
    ON.store(true, Ordering::Relaxed);
    let before = BYTES.load(Ordering::Relaxed);
    let probe = std::hint::black_box(vec![0u8; 4096]);
    let moved = BYTES.load(Ordering::Relaxed) != before;
    drop(probe);
    if !moved {
        stop();
    }
    moved
}

/// Turns counting off.
fn stop() {
    ON.store(false, Ordering::Relaxed);
}

fn add(n: usize) {
    if ON.load(Ordering::Relaxed) {
        BYTES.fetch_add(n as u64, Ordering::Relaxed);
    }
}

fn sub(n: usize) {
    if ON.load(Ordering::Relaxed) {
        BYTES.fetch_sub(n as u64, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards to `A` with the caller's arguments, and
// only adjusts a counter besides.
unsafe impl<A: GlobalAlloc> GlobalAlloc for Counting<A> {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.alloc(layout) };
        if !p.is_null() {
            add(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.alloc_zeroed(layout) };
        if !p.is_null() {
            add(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        sub(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { self.0.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { self.0.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            sub(layout.size());
            add(new_size);
        }
        p
    }
}

/// A heap measurement: counting, or glibc's counters.
#[derive(Debug)]
pub struct HeapProbe {
    counting: bool,
}

impl HeapProbe {
    /// Starts measuring: counting when [`Counting`] is the global allocator.
    pub fn start() -> Self {
        Self { counting: start() }
    }

    /// Bytes in use now, if known: only differences between two readings
    /// of one probe mean anything.
    pub fn in_use(&self) -> Option<u64> {
        if self.counting {
            return Some(BYTES.load(Ordering::Relaxed));
        }
        glibc_in_use()
    }
}

impl Drop for HeapProbe {
    fn drop(&mut self) {
        if self.counting {
            stop();
        }
    }
}

/// Bytes glibc's allocator has handed out and not taken back, if known.
fn glibc_in_use() -> Option<u64> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: `mallinfo2` only reads the allocator's counters; it takes
        // no pointers and is safe to call from any thread.
        let info = unsafe { libc::mallinfo2() };
        u64::try_from(info.uordblks + info.hblkhd).ok()
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_in_use_grows_with_a_live_allocation() {
        // Tests run on the system allocator: glibc's counters answer.
        let probe = HeapProbe { counting: false };
        let Some(before) = probe.in_use() else { return };
        let block = vec![1u8; 1 << 20];
        let after = probe.in_use().unwrap_or(0);
        assert!(after >= before + (1 << 20), "{before} -> {after}");
        drop(block);
    }

    #[test]
    fn counting_follows_allocations_frees_and_reallocations() {
        let a = Counting(std::alloc::System);
        ON.store(true, Ordering::Relaxed);
        let before = BYTES.load(Ordering::Relaxed);
        let layout = Layout::from_size_align(1000, 8).unwrap_or(Layout::new::<u64>());
        // SAFETY: a non-zero layout; the block is freed with the same
        // allocator and its current layout.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            let grown = a.realloc(p, layout, 3000);
            assert!(!grown.is_null());
            let in_use = BYTES.load(Ordering::Relaxed) - before;
            // Other tests' allocations go to the system allocator directly,
            // so only this wrapper moves the counter.
            assert_eq!(in_use, 3000);
            a.dealloc(grown, Layout::from_size_align(3000, 8).unwrap_or(layout));
        }
        assert_eq!(BYTES.load(Ordering::Relaxed), before);
        ON.store(false, Ordering::Relaxed);
    }
}
