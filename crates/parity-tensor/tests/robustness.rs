//! Property tests: every reader, fed truncated, mutated or random bytes, returns
//! Ok or Err without panicking and without large allocations; and every writer
//! round-trips random tensors bit for bit.
//!
//! A counting global allocator records the largest single allocation, so
//! "no unbounded allocation" is asserted rather than assumed.

use parity_tensor::{
    load_tensor, parse_npy_bytes, read_npy, read_npz, read_safetensors, write_npy, write_npz,
    write_safetensors, DType, Tensor,
};
use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Passes through to the system allocator, remembering the largest request.
struct PeakAlloc;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for PeakAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: PeakAlloc = PeakAlloc;

/// Inputs here are at most a few KiB; nothing should come near this.
const ALLOC_LIMIT: usize = 64 << 20;

fn assert_small_allocations() {
    let peak = LARGEST.load(Ordering::Relaxed);
    assert!(peak < ALLOC_LIMIT, "largest allocation {peak} bytes");
}

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(DType::ALL.to_vec())
}

/// A random tensor of up to 4 dims of up to 5 each; bool bytes are 0/1.
fn tensor() -> impl Strategy<Value = Tensor> {
    (dtype(), prop::collection::vec(0usize..5, 0..4)).prop_flat_map(|(dtype, shape)| {
        let n = shape.iter().product::<usize>() * dtype.size();
        prop::collection::vec(any::<u8>(), n).prop_map(move |mut bytes| {
            if dtype == DType::Bool {
                bytes.iter_mut().for_each(|b| *b &= 1);
            }
            Tensor::from_bytes(dtype, shape.clone(), bytes).unwrap()
        })
    })
}

/// Byte edits: (position seed, new byte) pairs and an optional truncation seed.
fn edits() -> impl Strategy<Value = (Vec<(usize, u8)>, Option<usize>)> {
    (
        prop::collection::vec((any::<usize>(), any::<u8>()), 0..6),
        any::<Option<usize>>(),
    )
}

fn mutate(mut bytes: Vec<u8>, (flips, cut): &(Vec<(usize, u8)>, Option<usize>)) -> Vec<u8> {
    if !bytes.is_empty() {
        for &(pos, b) in flips {
            let len = bytes.len();
            bytes[pos % len] = b;
        }
    }
    if let Some(cut) = cut {
        bytes.truncate(cut % (bytes.len() + 1));
    }
    bytes
}

fn same(a: &Tensor, b: &Tensor) -> bool {
    a.dtype() == b.dtype() && a.shape() == b.shape() && a.bytes() == b.bytes()
}

/// Reads every array of a file through all entry points; only panics matter.
fn read_everything(path: &Path) {
    let _ = load_tensor(path, None);
    if let Ok(npz) = read_npz(path) {
        for k in npz.keys() {
            if let Ok(t) = npz.get(k) {
                let _ = t.to_f64_vec();
            }
        }
    }
    if let Ok(st) = read_safetensors(path) {
        for k in st.names() {
            if let Ok(t) = st.get(k) {
                let _ = t.to_f64_vec();
            }
        }
    }
    if let Ok(t) = read_npy(path) {
        let _ = t.to_f64_vec();
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn writers_round_trip_bit_exact(t in tensor(), compressed: bool) {
        let dir = tempfile::tempdir().unwrap();
        let npy = dir.path().join("t.npy");
        write_npy(&npy, &t).unwrap();
        prop_assert!(same(&read_npy(&npy).unwrap(), &t));
        let npz = dir.path().join("t.npz");
        write_npz(&npz, &[("a/b c", &t), ("x", &t)], compressed).unwrap();
        let archive = read_npz(&npz).unwrap();
        prop_assert!(same(&archive.get("a/b c").unwrap(), &t));
        prop_assert!(same(&archive.get("x").unwrap(), &t));
        let st = dir.path().join("t.safetensors");
        write_safetensors(&st, &[("first", &t), ("second", &t)], None).unwrap();
        prop_assert!(same(&read_safetensors(&st).unwrap().get("second").unwrap(), &t));
    }

    #[test]
    fn npy_parser_survives_mutation(t in tensor(), e in edits()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.npy");
        write_npy(&path, &t).unwrap();
        let bytes = mutate(std::fs::read(&path).unwrap(), &e);
        let _ = parse_npy_bytes(&bytes, &path);
        std::fs::write(&path, &bytes).unwrap();
        read_everything(&path);
        assert_small_allocations();
    }

    #[test]
    fn npy_header_with_arbitrary_shape_and_descr(
        dims in prop::collection::vec(any::<u64>(), 0..5),
        descr in prop::sample::select(vec!["<f4", ">f8", "|b1", "<V2", "<u4", "'", "<f4', 'x': ('"]),
        fortran: bool,
        data in prop::collection::vec(any::<u8>(), 0..64),
    ) {
        let shape: Vec<String> = dims.iter().map(|d| format!("{d}, ")).collect();
        let header = format!(
            "{{'descr': '{descr}', 'fortran_order': {}, 'shape': ({}), }}\n",
            if fortran { "True" } else { "False" },
            shape.concat()
        );
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes.extend(&data);
        if let Ok(t) = parse_npy_bytes(&bytes, Path::new("gen.npy")) {
            prop_assert_eq!(t.bytes().len(), data.len());
        }
        assert_small_allocations();
    }

    #[test]
    fn npz_reader_survives_mutation(t in tensor(), compressed: bool, e in edits()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.npz");
        write_npz(&path, &[("a", &t), ("b", &t)], compressed).unwrap();
        let bytes = mutate(std::fs::read(&path).unwrap(), &e);
        std::fs::write(&path, bytes).unwrap();
        read_everything(&path);
        assert_small_allocations();
    }

    #[test]
    fn safetensors_reader_survives_mutation(t in tensor(), e in edits()) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.safetensors");
        write_safetensors(&path, &[("a", &t), ("b", &t)], None).unwrap();
        let bytes = mutate(std::fs::read(&path).unwrap(), &e);
        std::fs::write(&path, bytes).unwrap();
        read_everything(&path);
        assert_small_allocations();
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512), ext in 0usize..3) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(["r.npy", "r.npz", "r.safetensors"][ext]);
        std::fs::write(&path, &bytes).unwrap();
        read_everything(&path);
        let _ = parse_npy_bytes(&bytes, &path);
        assert_small_allocations();
    }
}

#[test]
fn huge_declared_shapes_fail_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    // npy claiming 2^60 f32 elements with 8 bytes of data.
    let header = "{'descr': '<f4', 'fortran_order': True, 'shape': (1152921504606846976, 1), }\n";
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend([0u8; 8]);
    let err = parse_npy_bytes(&bytes, Path::new("huge.npy"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("huge.npy") && err.contains("1152921504606846976"),
        "{err}"
    );

    // The same header inside a deflated npz member.
    let npz = dir.path().join("huge.npz");
    {
        let file = std::fs::File::create(&npz).unwrap();
        let mut zip = zip::ZipWriter::new(file);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("x.npy", opts).unwrap();
        std::io::Write::write_all(&mut zip, &bytes).unwrap();
        zip.finish().unwrap();
    }
    let err = read_npz(&npz).unwrap().get("x").unwrap_err().to_string();
    assert!(err.contains("huge.npz") && err.contains("`x`"), "{err}");

    // safetensors with a shape whose byte size overflows.
    let st = dir.path().join("huge.safetensors");
    let json = r#"{"t":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#;
    let mut file = (json.len() as u64).to_le_bytes().to_vec();
    file.extend(json.as_bytes());
    file.extend([0u8; 8]);
    std::fs::write(&st, file).unwrap();
    let err = read_safetensors(&st).unwrap_err().to_string();
    assert!(
        err.contains("huge.safetensors") && err.contains("`t`"),
        "{err}"
    );
    assert_small_allocations();
}
