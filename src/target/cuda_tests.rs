//! The SM and PTX ISA comparison, with values (no GPU here).

use super::*;

fn gb10() -> CudaDevice {
    CudaDevice {
        ordinal: 0,
        name: "NVIDIA GB10".to_string(),
        compute_capability: (12, 1),
        driver_version: 13000,
    }
}

fn ptx(target: &str, version: (u32, u32)) -> Ptx {
    Ptx {
        target: target.to_string(),
        version,
    }
}

#[test]
fn sm_names_split_into_capability_and_suffix() {
    assert_eq!(parse_sm("sm_89"), Some((8, 9, ' ')));
    assert_eq!(parse_sm("sm_90a"), Some((9, 0, 'a')));
    assert_eq!(parse_sm("sm_121"), Some((12, 1, ' ')));
    assert_eq!(parse_sm("sm_100f"), Some((10, 0, 'f')));
    for bad in ["sm_", "sm_9", "compute_90", "sm_90x", "sm_9a0", "sm_a"] {
        assert_eq!(parse_sm(bad), None, "{bad}");
    }
}

#[test]
fn the_users_sm_90a_module_on_a_gb10_is_named_as_exactly_that() {
    let problem = ptx_problem(&ptx("sm_90a", (7, 8)), &gb10()).expect("refused");
    assert_eq!(
        problem,
        "its PTX is built for sm_90a (architecture-specific: compute capability 9.0 only), and device 0 `NVIDIA GB10` (compute capability 12.1, CUDA driver 13.0) cannot run it (no kernel image is available for the device); rebuild it with --iree-cuda-target=sm_121"
    );
}

#[test]
fn plain_ptx_runs_on_its_sm_and_newer_but_not_older() {
    assert_eq!(ptx_problem(&ptx("sm_121", (8, 8)), &gb10()), None);
    assert_eq!(ptx_problem(&ptx("sm_89", (8, 4)), &gb10()), None);
    let ada = CudaDevice {
        compute_capability: (8, 9),
        name: "NVIDIA L4".into(),
        ..gb10()
    };
    let problem = ptx_problem(&ptx("sm_121", (8, 8)), &ada).expect("refused");
    assert!(
        problem.contains("built for sm_121 (compute capability 12.1 and newer)")
            && problem.contains("`NVIDIA L4` (compute capability 8.9")
            && problem.contains("--iree-cuda-target=sm_89"),
        "{problem}"
    );
    // Architecture-specific PTX runs on exactly its own capability.
    let hopper = CudaDevice {
        compute_capability: (9, 0),
        ..gb10()
    };
    assert_eq!(ptx_problem(&ptx("sm_90a", (7, 8)), &hopper), None);
    // Family-specific: same major, minor at least.
    assert_eq!(ptx_problem(&ptx("sm_120f", (8, 8)), &gb10()), None);
    assert!(ptx_problem(&ptx("sm_100f", (8, 8)), &gb10()).is_some());
}

#[test]
fn ptx_newer_than_the_driver_jit_compiles_is_refused() {
    let old_driver = CudaDevice {
        driver_version: 12040,
        ..gb10()
    };
    let problem = ptx_problem(&ptx("sm_121", (8, 8)), &old_driver).expect("refused");
    assert!(
        problem.contains("its PTX is ISA 8.8, newer than the 8.4 that device 0")
            && problem.contains("CUDA driver 12.4")
            && problem.contains("update the NVIDIA driver"),
        "{problem}"
    );
    assert_eq!(ptx_problem(&ptx("sm_89", (8, 4)), &old_driver), None);
    assert_eq!(max_ptx_isa(11080), Some((7, 8)));
    assert_eq!(max_ptx_isa(12060), Some((8, 5)));
    assert_eq!(max_ptx_isa(12090), Some((8, 8)));
    // 12.7 brought ISA 8.6; 13.1 brought 9.1.
    assert_eq!(max_ptx_isa(12070), Some((8, 6)));
    assert_eq!(max_ptx_isa(13010), Some((9, 1)));
    // Outside the table: not judged.
    assert_eq!(max_ptx_isa(10020), None);
    assert_eq!(max_ptx_isa(14000), None);
}

#[test]
fn device_strings_give_ordinals() {
    assert_eq!(ordinal("cuda"), Some(0));
    assert_eq!(ordinal("cuda://"), Some(0));
    assert_eq!(ordinal("cuda://1"), Some(1));
    assert_eq!(ordinal("cuda://GPU-1234"), None);
}

#[test]
fn without_libcuda_the_query_says_so() {
    // No machine of this project has libcuda; where one does, the query works.
    if let Err(e) = query_device(0) {
        assert!(e.contains("libcuda") || e.contains("CUresult"), "{e}");
    }
}
