//! Replays every committed corpus file (`fuzz/corpus/<target>/*`) through its
//! fuzz target body and asserts, per input: no panic, at most [`HANG_AFTER`] of
//! wall time (a hang detector, not a performance check), and a peak heap below
//! the target's bound, a multiple of the input size plus a constant.
//!
//! The peak is measured by a counting global allocator in this test binary; it
//! counts the worker thread that runs the input, so tests running alongside do
//! not disturb it. Memory-mapped file bytes are not heap and are not counted.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// An input still running after this long is reported as a hang.
const HANG_AFTER: Duration = Duration::from_secs(10);

/// Slack every input gets on top of its per-byte allowance (buffers, maps, errors).
const BASE_BYTES: usize = 1 << 20;

/// Peak heap allowed per input byte, per target. npz is the loose one: a
/// deflated member may legitimately expand up to 1032:1, and the reader bounds
/// its buffer by exactly that; the others hold a few copies of their input
/// (text, node tree or SSA graph, error messages).
fn bytes_per_input_byte(target: &str) -> usize {
    match target {
        "npz" => 1100,
        "spec" | "mlir" => 64,
        _ => 8,
    }
}

/// The system allocator, counting live and peak bytes of the current thread.
struct CountingAlloc;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn track(delta: isize) {
    // try_with: the counters have no destructor, but never panic in the allocator.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call is forwarded unchanged to `System`; only counters are added.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            track(layout.size() as isize);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            track(layout.size() as isize);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        track(-(layout.size() as isize));
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            track(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// What one input did: its peak heap above the start, or the panic message.
type Outcome = Result<usize, String>;

/// Runs `input` through `run` on a fresh thread; None if it is still running
/// after `hang_after` (the thread is left behind and the test fails).
fn run_one(run: fn(&[u8]), input: Vec<u8>, hang_after: Duration) -> Option<(Outcome, Duration)> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let start = Instant::now();
        let base = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(base));
        let result = std::panic::catch_unwind(|| run(&input));
        let peak = (PEAK.with(Cell::get) - base).max(0) as usize;
        let outcome = result.map(|()| peak).map_err(|e| {
            e.downcast_ref::<String>()
                .cloned()
                .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic".into())
        });
        let _ = tx.send((outcome, start.elapsed()));
    });
    rx.recv_timeout(hang_after).ok()
}

fn corpus_files(target: &str) -> Vec<PathBuf> {
    let dir = parity_fuzz::corpus_root().join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.expect("corpus entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

#[test]
fn every_corpus_input_returns_within_time_and_memory_bounds() {
    let mut failures = Vec::new();
    let mut replayed = 0;
    for target in parity_fuzz::TARGETS {
        let files = corpus_files(target.name);
        assert!(
            files.iter().any(|f| f
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("seed-"))),
            "fuzz/corpus/{} has no seed-* file from the real fixtures",
            target.name
        );
        let per_byte = bytes_per_input_byte(target.name);
        let (mut worst_ratio, mut max_peak, mut slowest) = (0.0f64, 0usize, Duration::ZERO);
        for file in files {
            let input = std::fs::read(&file).expect("corpus file is readable");
            let bound = BASE_BYTES + per_byte * input.len();
            let shown = file.display();
            match run_one(target.run, input, HANG_AFTER) {
                None => failures.push(format!(
                    "{shown}: still running after {HANG_AFTER:?} (hang)"
                )),
                Some((Err(panic), _)) => failures.push(format!("{shown}: panicked: {panic}")),
                Some((Ok(peak), _)) if peak > bound => failures.push(format!(
                    "{shown}: peak heap {peak} B over the bound {bound} B"
                )),
                Some((Ok(peak), took)) => {
                    worst_ratio = worst_ratio.max(peak as f64 / bound as f64);
                    max_peak = max_peak.max(peak);
                    slowest = slowest.max(took);
                }
            }
            replayed += 1;
        }
        eprintln!(
            "{:<12} peak heap at most {max_peak} B, peak/bound at most {worst_ratio:.3}, slowest input {slowest:?}",
            target.name
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {replayed} inputs failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The meter itself: an input that allocates far past its bound must be caught,
/// so the memory assertion above can fail.
#[test]
fn the_peak_meter_sees_a_large_allocation() {
    fn hog(_: &[u8]) {
        let v = vec![1u8; 32 << 20];
        std::hint::black_box(&v);
    }
    let (outcome, _) = run_one(hog, Vec::new(), HANG_AFTER).expect("hog returns");
    let peak = outcome.expect("hog does not panic");
    assert!(peak >= 32 << 20, "peak {peak} misses a 32 MiB allocation");
    assert!(
        peak < 33 << 20,
        "peak {peak} counts more than the hog allocated"
    );
}

/// The watchdog itself: an input that never returns is reported, not waited on forever.
#[test]
fn the_watchdog_reports_a_hang() {
    fn stuck(_: &[u8]) {
        std::thread::sleep(Duration::from_secs(2));
    }
    assert!(run_one(stuck, Vec::new(), Duration::from_millis(100)).is_none());
}

/// A panicking target is reported with its message.
#[test]
fn a_panic_is_reported_with_its_message() {
    fn boom(_: &[u8]) {
        panic!("boom {}", 7);
    }
    let (outcome, _) = run_one(boom, Vec::new(), HANG_AFTER).expect("boom returns");
    assert_eq!(outcome, Err("boom 7".to_string()));
}

/// `TARGETS`, the libFuzzer wrappers in `fuzz/fuzz_targets/` and the corpus
/// directories name the same set, so no target is fuzzed without being replayed.
#[test]
fn targets_wrappers_and_corpora_match() {
    let stems = |dir: PathBuf, files: bool| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .filter(|p| if files { p.is_file() } else { p.is_dir() })
            .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        names
    };
    let mut names: Vec<String> = parity_fuzz::TARGETS
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    let root = parity_fuzz::corpus_root();
    assert_eq!(
        stems(root.join("../fuzz_targets"), true),
        names,
        "fuzz/fuzz_targets/*.rs"
    );
    assert_eq!(stems(root, false), names, "fuzz/corpus/*/");
}
