//! The analyzers' large arrays: on huge pages where the OS allows, and prefetched. The
//! exact stack reads its last-use table (hundreds of MiB at 10^7 items) at random, one
//! entry per reference; on 4 KiB pages nearly every such read also misses the CPU's TLB,
//! and each read waits for DRAM unless it was asked for ahead.

/// `n` copies of `value`, the memory advised for huge pages before it is first touched.
pub(crate) fn filled<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v: Vec<T> = Vec::with_capacity(n);
    advise(v.as_mut_ptr().cast::<u8>(), n * std::mem::size_of::<T>());
    v.resize(n, value);
    v
}

#[cfg(target_os = "linux")]
fn advise(ptr: *mut u8, bytes: usize) {
    // Only the whole huge pages (2 MiB on x86-64 and most aarch64 kernels) inside it.
    const HUGE_PAGE: usize = 2 << 20;
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize).saturating_add(bytes) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        // SAFETY: `start..end` lies inside an allocation this module owns and has not
        // written yet; MADV_HUGEPAGE changes only how the kernel backs it. A refusal (THP
        // disabled) leaves 4 KiB pages, so the result is ignored.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise(_ptr: *mut u8, _bytes: usize) {}

/// Asks for the cache line holding `value`, without waiting for it.
#[inline(always)]
pub(crate) fn prefetch<T>(value: &T) {
    // SAFETY: a prefetch is a hint: it reads nothing into the program and never faults,
    // and the pointer comes from a live reference.
    #[cfg(target_arch = "x86_64")]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
            (value as *const T).cast::<i8>(),
        );
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    #[test]
    fn filled_holds_the_value() {
        for n in [0usize, 1, 1000, 3 << 20] {
            let v = super::filled(n, 7u32);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == 7));
        }
    }
}
