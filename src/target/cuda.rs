//! A CUDA module's PTX against the CUDA device it would run on: the SM
//! (`.target`) against the device's compute capability, and the PTX ISA
//! (`.version`) against what the driver can JIT-compile. The comparison is
//! a pure function ([`ptx_problem`]); the device's facts come from libcuda
//! ([`query_device`]) on a machine that has one.

use super::vmfb::Ptx;

/// What libcuda says about one CUDA device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CudaDevice {
    /// The device ordinal.
    pub ordinal: i32,
    /// Its name (`NVIDIA GB10`).
    pub name: String,
    /// Compute capability (major, minor), e.g. (12, 1).
    pub compute_capability: (u32, u32),
    /// `cuDriverGetVersion`: 1000 * major + 10 * minor (12080 = CUDA 12.8).
    pub driver_version: u32,
}

impl CudaDevice {
    /// One line: `device 0 `NVIDIA GB10` (compute capability 12.1, CUDA driver 12.8)`.
    pub fn describe(&self) -> String {
        let (major, minor) = self.compute_capability;
        format!(
            "device {} `{}` (compute capability {major}.{minor}, CUDA driver {}.{})",
            self.ordinal,
            self.name,
            self.driver_version / 1000,
            self.driver_version % 1000 / 10
        )
    }
}

/// An SM name split: `sm_90a` -> (9, 0, 'a'); `sm_121` -> (12, 1, ' ').
pub fn parse_sm(target: &str) -> Option<(u32, u32, char)> {
    let digits = target.strip_prefix("sm_")?;
    let (digits, suffix) = match digits.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, c)) if i + c.len_utf8() == digits.len() && (c == 'a' || c == 'f') => {
            (&digits[..i], c)
        }
        Some(_) => return None,
        None => (digits, ' '),
    };
    if digits.len() < 2 {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some((major.parse().ok()?, minor.parse().ok()?, suffix))
}

/// The newest PTX ISA a CUDA driver of `driver_version` JIT-compiles (the
/// release history in NVIDIA's PTX ISA notes, as NVIDIA's cuda-python
/// `cuda/bindings/utils/_ptx_utils.py` tabulates it: CUDA 11.x -> 7.x,
/// 12.0..12.5 -> 8.0..8.5, 12.6 -> 8.5 (no new ISA), 12.7 -> 8.6, 12.8 -> 8.7,
/// 12.9 -> 8.8, 13.0 -> 9.0, 13.1 -> 9.1). None: a driver outside this table
/// (older than 11.0, or newer than it knows), which is not judged.
pub fn max_ptx_isa(driver_version: u32) -> Option<(u32, u32)> {
    let (major, minor) = (driver_version / 1000, driver_version % 1000 / 10);
    match (major, minor) {
        (11, m) if m <= 8 => Some((7, m)),
        (12, m) if m <= 5 => Some((8, m)),
        (12, 6) => Some((8, 5)),
        (12, 7) => Some((8, 6)),
        (12, 8) => Some((8, 7)),
        (12, 9) => Some((8, 8)),
        (13, m) if m <= 1 => Some((9, m)),
        _ => None,
    }
}

/// Why PTX `ptx` cannot run on `device`, or None when it can. PTX for a
/// plain `sm_XY` is JIT-compiled for any device of compute capability X.Y or
/// newer; `sm_XYa` uses features of X.Y only and runs on X.Y alone;
/// `sm_XYf` runs on the X family at minor Y or newer.
pub fn ptx_problem(ptx: &Ptx, device: &CudaDevice) -> Option<String> {
    let (dev_major, dev_minor) = device.compute_capability;
    let Some((major, minor, suffix)) = parse_sm(&ptx.target) else {
        return Some(format!(
            "its PTX targets `{}`, which is not an SM this check knows",
            ptx.target
        ));
    };
    let runs = match suffix {
        'a' => (dev_major, dev_minor) == (major, minor),
        'f' => dev_major == major && dev_minor >= minor,
        _ => (dev_major, dev_minor) >= (major, minor),
    };
    let fix = format!("rebuild it with --iree-cuda-target=sm_{dev_major}{dev_minor}");
    if !runs {
        let scope = match suffix {
            'a' => format!("architecture-specific: compute capability {major}.{minor} only"),
            'f' => format!("family-specific: compute capability {major}.{minor} to {major}.x"),
            _ => format!("compute capability {major}.{minor} and newer"),
        };
        return Some(format!(
            "its PTX is built for {} ({scope}), and {} cannot run it (no kernel image is available for the device); {fix}",
            ptx.target,
            device.describe()
        ));
    }
    let (isa_major, isa_minor) = ptx.version;
    match max_ptx_isa(device.driver_version) {
        Some(max) if ptx.version > max => Some(format!(
            "its PTX is ISA {isa_major}.{isa_minor}, newer than the {}.{} that {} JIT-compiles; update the NVIDIA driver, or build with an older PTX ISA",
            max.0,
            max.1,
            device.describe()
        )),
        _ => None,
    }
}

/// The device ordinal of an IREE CUDA device string: `cuda` -> 0,
/// `cuda://1` -> 1; None for a path that is not an ordinal (a UUID).
pub fn ordinal(device: &str) -> Option<i32> {
    match device.split_once("://") {
        None => Some(0),
        Some((_, "")) => Some(0),
        Some((_, rest)) => rest.parse().ok(),
    }
}

/// Queries device `ordinal` through libcuda (dlopen `libcuda.so.1`, then
/// cuInit, cuDeviceGet, cuDeviceGetName, cuDeviceGetAttribute and
/// cuDriverGetVersion). Err says why not (no libcuda, no such device).
///
/// This path cannot run on this project's machines (no GPU, no libcuda): it
/// is exercised only on a CUDA machine (ci/gpu-check.sh); here it returns
/// the dlopen failure, and the comparison it feeds is tested with values.
pub fn query_device(ordinal: i32) -> Result<CudaDevice, String> {
    type Fn1 = unsafe extern "C" fn(u32) -> i32;
    type FnGet = unsafe extern "C" fn(*mut i32, i32) -> i32;
    type FnName = unsafe extern "C" fn(*mut libc::c_char, i32, i32) -> i32;
    type FnAttr = unsafe extern "C" fn(*mut i32, i32, i32) -> i32;
    type FnVer = unsafe extern "C" fn(*mut i32) -> i32;
    const MAJOR: i32 = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
    const MINOR: i32 = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR
                           // SAFETY: dlopen/dlsym with NUL-terminated names; each symbol is cast to
                           // the signature of libcuda's C API (cuda.h), called with valid pointers
                           // to locals; the handle is never closed (libcuda stays loaded, as IREE
                           // keeps it).
    unsafe {
        let lib = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL);
        if lib.is_null() {
            return Err("libcuda.so.1 cannot be loaded (no NVIDIA driver here)".to_string());
        }
        let sym = |name: &std::ffi::CStr| {
            let p = libc::dlsym(lib, name.as_ptr());
            if p.is_null() {
                Err(format!("libcuda has no {}", name.to_string_lossy()))
            } else {
                Ok(p)
            }
        };
        let init: Fn1 = std::mem::transmute(sym(c"cuInit")?);
        let get: FnGet = std::mem::transmute(sym(c"cuDeviceGet")?);
        let name_of: FnName = std::mem::transmute(sym(c"cuDeviceGetName")?);
        let attr: FnAttr = std::mem::transmute(sym(c"cuDeviceGetAttribute")?);
        let version: FnVer = std::mem::transmute(sym(c"cuDriverGetVersion")?);
        let check = |what: &str, rc: i32| match rc {
            0 => Ok(()),
            rc => Err(format!("{what} failed (CUresult {rc})")),
        };
        check("cuInit", init(0))?;
        let mut device = 0;
        check(
            &format!("cuDeviceGet({ordinal})"),
            get(&mut device, ordinal),
        )?;
        let mut name = [0 as libc::c_char; 256];
        check("cuDeviceGetName", name_of(name.as_mut_ptr(), 255, device))?;
        let (mut major, mut minor, mut driver) = (0, 0, 0);
        check("cuDeviceGetAttribute", attr(&mut major, MAJOR, device))?;
        check("cuDeviceGetAttribute", attr(&mut minor, MINOR, device))?;
        check("cuDriverGetVersion", version(&mut driver))?;
        Ok(CudaDevice {
            ordinal,
            name: std::ffi::CStr::from_ptr(name.as_ptr())
                .to_string_lossy()
                .into_owned(),
            compute_capability: (major.max(0) as u32, minor.max(0) as u32),
            driver_version: driver.max(0) as u32,
        })
    }
}

#[cfg(test)]
#[path = "cuda_tests.rs"]
mod tests;
