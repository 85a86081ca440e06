//! `parity bench`: timings a user can compare across machines and commits,
//! printed as a table. Measuring only: nothing here asserts a time.
//!
//! - [`throughput`]: `compare` on an in-memory f32 pair, in GB/s of input,
//!   beside the memory-read rate measured in the same run.
//! - [`gate`]: wall time of the gate (`parity check`'s run) on a spec:
//!   cold (empty artifact cache), warm, and after one public function of a
//!   module was edited, with the cache entries each run added.
//! - [`scale`]: the gate at the Gemma3n audio tower's and E2B/E4B text layers' real widths against
//!   the raw IREE floor, peak RSS against the weights, bytes uploaded.

pub mod bisect;
pub mod gate;
pub mod scale;
pub mod scale_table;
pub mod throughput;

use std::time::Duration;

/// Repeated timings: wall time of every run, and the CPU time the process
/// got during each (all threads), which a busy machine distorts less.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Timings {
    /// Wall time of every run, in order.
    pub runs: Vec<Duration>,
    /// Process CPU time (user + system, all threads) of every run, in order.
    pub cpu: Vec<Duration>,
}

impl Timings {
    /// The fastest run (zero when there was none).
    pub fn min(&self) -> Duration {
        self.runs.iter().copied().min().unwrap_or_default()
    }

    /// The median run (the lower middle for an even count; zero when there was none).
    pub fn median(&self) -> Duration {
        let mut sorted = self.runs.clone();
        sorted.sort();
        sorted
            .get(sorted.len().saturating_sub(1) / 2)
            .copied()
            .unwrap_or_default()
    }

    /// The smallest CPU time of a run (zero when there was none).
    pub fn min_cpu(&self) -> Duration {
        self.cpu.iter().copied().min().unwrap_or_default()
    }

    /// Times `f` once, wall and CPU, and appends the run.
    pub fn time(&mut self, f: impl FnOnce()) {
        let (wall, cpu) = (std::time::Instant::now(), process_cpu());
        f();
        self.runs.push(wall.elapsed());
        self.cpu.push(process_cpu().saturating_sub(cpu));
    }

    /// Every run in milliseconds, comma-separated, for the table.
    pub fn all_ms(&self) -> String {
        let ms: Vec<String> = self
            .runs
            .iter()
            .map(|d| format!("{:.0}", d.as_secs_f64() * 1e3))
            .collect();
        ms.join(",")
    }
}

/// CPU time (user + system) this process has used so far, all threads.
pub fn process_cpu() -> Duration {
    cpu_of(libc::RUSAGE_SELF)
}

/// CPU time (user + system) of this process and of its children that have
/// ended and been waited for (the compiler processes).
pub fn process_and_children_cpu() -> Duration {
    cpu_of(libc::RUSAGE_SELF) + cpu_of(libc::RUSAGE_CHILDREN)
}

fn cpu_of(who: libc::c_int) -> Duration {
    // SAFETY: getrusage writes one rusage struct, which we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `who` is RUSAGE_SELF or RUSAGE_CHILDREN and `usage` is a valid pointer.
    if unsafe { libc::getrusage(who, &mut usage) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// This process's peak resident set size so far, in bytes (0 when unknown).
pub fn peak_rss() -> u64 {
    // SAFETY: getrusage writes one rusage struct, which we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF and a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return 0;
    }
    // Linux reports kilobytes.
    usage.ru_maxrss.max(0) as u64 * 1024
}

/// Resets this process's peak resident set to its current size (Linux:
/// `5` into /proc/self/clear_refs resets VmHWM, which `getrusage` reads),
/// so the next [`peak_rss`] is the peak of what ran since; false where the
/// kernel refused it (the peak then still counts everything before).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The 1-minute load average, so a table says how busy the machine was.
pub fn load_average() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn min_and_median_of_timings() {
        let ms = |v: &[u64]| Timings {
            runs: v.iter().map(|&m| Duration::from_millis(m)).collect(),
            cpu: vec![],
        };
        let t = ms(&[30, 10, 20, 40]);
        assert_eq!(t.min(), Duration::from_millis(10));
        assert_eq!(t.median(), Duration::from_millis(20));
        assert_eq!(ms(&[5, 1, 3]).median(), Duration::from_millis(3));
        assert_eq!(t.all_ms(), "30,10,20,40");
        assert_eq!(ms(&[]).min(), Duration::ZERO);
        assert_eq!(ms(&[]).median(), Duration::ZERO);
        let mut t = Timings::default();
        t.time(|| {
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = std::hint::black_box(x ^ i);
            }
        });
        assert_eq!((t.runs.len(), t.cpu.len()), (1, 1));
        assert!(t.cpu[0] > Duration::ZERO && t.runs[0] > Duration::ZERO);
    }
}
