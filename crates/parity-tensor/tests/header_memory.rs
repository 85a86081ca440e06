//! Parsing a large safetensors header allocates a small multiple of the header
//! size, not the ~17x that a `serde_json::Value` tree costs.
//!
//! A counting global allocator tracks live heap bytes and their peak, so the
//! bound is deterministic (the same allocations every run), unlike time or RSS.
//! The measured test resets the peak itself; the other test here allocates
//! little, but run with `--test-threads=1` for an exact figure.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Passes through to the system allocator, tracking live bytes and their peak.
struct PeakLive;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for PeakLive {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size);
        let out = unsafe { System.realloc(ptr, layout, new_size) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        out
    }
}

#[global_allocator]
static ALLOC: PeakLive = PeakLive;

/// Most heap bytes header parsing may hold at once, per header byte.
const MAX_BYTES_PER_HEADER_BYTE: usize = 6;

#[test]
fn a_large_header_parses_in_a_small_multiple_of_its_size() {
    // ~4 MB of empty tensors with realistic names, plus a metadata map.
    let mut header = String::from(r#"{"__metadata__":{"format":"pt"}"#);
    let mut n = 0usize;
    while header.len() < 4_000_000 {
        header.push_str(&format!(
            r#","layer.{n:07}.attention.weight":{{"dtype":"F32","shape":[0,64],"data_offsets":[0,0]}}"#
        ));
        n += 1;
    }
    header.push('}');
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.safetensors");
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(&(header.len() as u64).to_le_bytes())
        .unwrap();
    file.write_all(header.as_bytes()).unwrap();
    drop(file);
    let len = header.len();
    drop(header);

    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let st = parity_tensor::read_safetensors(&path).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert_eq!(st.names().len(), n);
    assert_eq!(st.metadata().get("format").map(String::as_str), Some("pt"));
    let ratio = peak as f64 / len as f64;
    println!("header {len} bytes, {n} tensors: peak heap {peak} bytes = {ratio:.2}x");
    assert!(
        peak <= MAX_BYTES_PER_HEADER_BYTE * len,
        "parsing a {len}-byte header held {peak} heap bytes ({ratio:.2}x, bound {MAX_BYTES_PER_HEADER_BYTE}x)"
    );
}

#[test]
fn a_shape_beyond_64_dimensions_is_refused_while_parsing() {
    let dims = vec!["1"; 65].join(",");
    let header = format!(r#"{{"x":{{"dtype":"F32","shape":[{dims}],"data_offsets":[0,4]}}}}"#);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep.safetensors");
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&[0; 4]);
    std::fs::write(&path, bytes).unwrap();
    let err = parity_tensor::read_safetensors(&path)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("deep.safetensors") && err.contains("more than 64 dimensions"),
        "{err}"
    );
}
