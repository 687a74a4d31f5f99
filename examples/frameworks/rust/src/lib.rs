//! ciprof's Rust example: known work (`burn`, about 10 ms of CPU per unit) and four libtest
//! tests of clearly different costs (1:2:3:4, about 1.5 s of CPU in all). libtest names a
//! test by its path inside the crate: ciprof should report "tests::tiny", "tests::small",
//! "tests::medium" and "tests::large". Each test appends "NAME SECONDS" (its thread's CPU
//! time) to the file named by $CIPROF_TRUTH.

/// Mixer steps in one unit of work.
const ITERS_PER_UNIT: u64 = 430_000;

/// One step of a 64-bit mixer (splitmix64's finaliser).
#[inline(never)]
pub fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58476d1ce4e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}

/// Does `units` of work and returns a value depending on all of it.
#[inline(never)]
pub fn burn(units: u64) -> u64 {
    let mut h = units;
    for i in 0..units * ITERS_PER_UNIT {
        h = mix(h.wrapping_add(i));
    }
    h
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    #[repr(C)]
    struct Timespec {
        tv_sec: i64,
        tv_nsec: i64,
    }

    extern "C" {
        // From the C library std links anyway: no crate needed.
        fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
    }

    /// The calling thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID).
    fn thread_cpu() -> f64 {
        const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
        let mut ts = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: ts is a valid, writable struct timespec.
        let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0, "clock_gettime failed");
        ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
    }

    /// Burns `units` of work as test `name` and records its CPU time.
    fn run(name: &str, units: u64) -> u64 {
        let t0 = thread_cpu();
        let h = super::burn(units);
        let secs = thread_cpu() - t0;
        if let Some(path) = std::env::var_os("CIPROF_TRUTH") {
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .expect("cannot open $CIPROF_TRUTH");
            // One write per line on an O_APPEND file: lines of parallel tests never mix.
            f.write_all(format!("{} {:.6}\n", name, secs).as_bytes())
                .expect("cannot write $CIPROF_TRUTH");
        }
        h
    }

    #[test]
    fn tiny() {
        assert_ne!(run("tests::tiny", 15), 0);
    }

    #[test]
    fn small() {
        assert_ne!(run("tests::small", 30), 0);
    }

    #[test]
    fn medium() {
        assert_ne!(run("tests::medium", 45), 0);
    }

    #[test]
    fn large() {
        assert_ne!(run("tests::large", 60), 0);
    }
}
