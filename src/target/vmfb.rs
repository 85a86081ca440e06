//! What a prebuilt vmfb's executables are built for, read from the file.
//!
//! IREE writes a vmfb as a zip archive of stored (uncompressed) entries: the
//! VM module (`module.fb`) and one entry per executable variant. Each
//! executable is either an ELF shared object (llvm-cpu's embedded ELF, whose
//! `e_machine` is its CPU arch) or a HAL executable flatbuffer behind a
//! 16-byte header whose magic names its format (`CDA1` CUDA, `VKE1`
//! Vulkan). A CUDA executable holds PTX text, whose `.target` and
//! `.version` lines say the SM and PTX ISA it needs.

/// The PTX requirements of one CUDA executable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ptx {
    /// `.target` (e.g. `sm_89`, `sm_90a`).
    pub target: String,
    /// `.version` (PTX ISA major, minor), e.g. (8, 4).
    pub version: (u32, u32),
}

/// One executable variant of a vmfb, by its content.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Executable {
    /// llvm-cpu's embedded ELF, for `arch` in IREE's naming (`x86_64`, `arm_64`, ...).
    Elf {
        /// The CPU arch of the machine code.
        arch: String,
    },
    /// `cuda-nvptx-fb`, with the PTX of each module it holds.
    Cuda {
        /// Each PTX module's target and ISA version.
        ptx: Vec<Ptx>,
    },
    /// `vulkan-spirv-fb`.
    Vulkan,
    /// A format this reader does not know (its 4-byte magic, printable).
    Other {
        /// The first four bytes of the entry.
        magic: String,
    },
}

impl Executable {
    /// IREE's executable format name, as `hal.executable.format` says it.
    pub fn format(&self) -> String {
        match self {
            Executable::Elf { arch } => format!("embedded-elf-{arch}"),
            Executable::Cuda { .. } => "cuda-nvptx-fb".to_string(),
            Executable::Vulkan => "vulkan-spirv-fb".to_string(),
            Executable::Other { magic } => format!("an unknown format (magic {magic:?})"),
        }
    }

    /// The HAL drivers that run this format (None: unknown, not judged).
    pub fn drivers(&self) -> Option<&'static [&'static str]> {
        match self {
            Executable::Elf { .. } => Some(&["local-task", "local-sync"]),
            Executable::Cuda { .. } => Some(&["cuda"]),
            Executable::Vulkan => Some(&["vulkan"]),
            Executable::Other { .. } => None,
        }
    }
}

/// The executables of the vmfb `bytes`, in archive order; None when the
/// file is not a zip-framed vmfb (an old or hand-made module: not judged).
pub fn executables(bytes: &[u8]) -> Option<Vec<Executable>> {
    let entries = zip_entries(bytes)?;
    Some(
        entries
            .into_iter()
            .filter(|(name, _)| name != "module.fb")
            .map(|(_, data)| classify(data))
            .collect(),
    )
}

/// IREE's name for a CPU arch of ELF `e_machine` (64-bit class when `wide`).
fn elf_arch(machine: u16, wide: bool) -> String {
    match (machine, wide) {
        (62, _) => "x86_64".into(),
        (3, _) => "x86_32".into(),
        (183, _) => "arm_64".into(),
        (40, _) => "arm_32".into(),
        (243, true) => "riscv_64".into(),
        (243, false) => "riscv_32".into(),
        (other, _) => format!("e_machine {other}"),
    }
}

fn classify(data: &[u8]) -> Executable {
    if data.starts_with(b"\x7fELF") && data.len() > 20 {
        let machine = u16::from_le_bytes([data[18], data[19]]);
        return Executable::Elf {
            arch: elf_arch(machine, data[4] == 2),
        };
    }
    match data.get(..4) {
        Some(b"CDA1") => Executable::Cuda { ptx: ptx_of(data) },
        Some(b"VKE1") => Executable::Vulkan,
        magic => Executable::Other {
            magic: String::from_utf8_lossy(magic.unwrap_or(data)).into_owned(),
        },
    }
}

/// Every PTX module's `.version` and `.target` in a CUDA executable (PTX is
/// text inside the flatbuffer; each module starts with its `.version`).
fn ptx_of(data: &[u8]) -> Vec<Ptx> {
    let text = String::from_utf8_lossy(data);
    let mut found = Vec::new();
    let mut version = None;
    for line in text.split(['\n', '\0']) {
        let line = line.trim();
        if let Some(v) = line.strip_prefix(".version ") {
            let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().ok());
            version = match (parts.next().flatten(), parts.next().flatten()) {
                (Some(major), Some(minor)) => Some((major, minor)),
                _ => None,
            };
        } else if let Some(t) = line.strip_prefix(".target ") {
            // `.target sm_89` or `.target sm_89, debug`.
            let target = t.split([',', ' ']).next().unwrap_or_default().to_string();
            if let Some(version) = version.take() {
                found.push(Ptx { target, version });
            }
        }
    }
    found
}

fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?) as u64)
}

fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?) as u64)
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The zip's entries (name, stored data), from its central directory,
/// ZIP64 included (IREE writes ZIP64 sizes and offsets).
fn zip_entries(b: &[u8]) -> Option<Vec<(String, &[u8])>> {
    // The end-of-central-directory record is in the last 64 KiB + 22 bytes.
    let from = b.len().saturating_sub(22 + 65_535);
    let eocd = (from..b.len().saturating_sub(21))
        .rev()
        .find(|&i| b[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])?;
    let mut count = u16_at(b, eocd + 10)?;
    let mut cd = u32_at(b, eocd + 16)?;
    if count == 0xffff || cd == 0xffff_ffff {
        // ZIP64: the locator just before the record points at the real one.
        let locator = eocd.checked_sub(20)?;
        if b.get(locator..locator + 4)? != [0x50, 0x4b, 0x06, 0x07] {
            return None;
        }
        let record = usize::try_from(u64_at(b, locator + 8)?).ok()?;
        if b.get(record..record + 4)? != [0x50, 0x4b, 0x06, 0x06] {
            return None;
        }
        count = u64_at(b, record + 32)?;
        cd = u64_at(b, record + 48)?;
    }
    let mut at = usize::try_from(cd).ok()?;
    let mut entries = Vec::new();
    for _ in 0..count {
        if b.get(at..at + 4)? != [0x50, 0x4b, 0x01, 0x02] || u16_at(b, at + 10)? != 0 {
            return None; // not a central header, or compressed (IREE stores)
        }
        let mut size = u32_at(b, at + 20)?;
        let mut local = u32_at(b, at + 42)?;
        let name_len = u16_at(b, at + 28)? as usize;
        let extra_len = u16_at(b, at + 30)? as usize;
        let comment_len = u16_at(b, at + 32)? as usize;
        let name = String::from_utf8_lossy(b.get(at + 46..at + 46 + name_len)?).into_owned();
        let extra = b.get(at + 46 + name_len..at + 46 + name_len + extra_len)?;
        let uncompressed = u32_at(b, at + 24)?;
        (size, local) = zip64_extra(extra, uncompressed, size, local)?;
        let local = usize::try_from(local).ok()?;
        if b.get(local..local + 4)? != [0x50, 0x4b, 0x03, 0x04] {
            return None;
        }
        let data_at =
            local + 30 + u16_at(b, local + 26)? as usize + u16_at(b, local + 28)? as usize;
        let data = b.get(data_at..data_at.checked_add(usize::try_from(size).ok()?)?)?;
        entries.push((name, data));
        at += 46 + name_len + extra_len + comment_len;
    }
    Some(entries)
}

/// The (compressed size, local header offset) of an entry, taking the
/// ZIP64 extra field's values for the fields that are 0xffffffff (they come
/// in the order uncompressed, compressed, offset, each only when needed).
fn zip64_extra(extra: &[u8], uncompressed: u64, size: u64, local: u64) -> Option<(u64, u64)> {
    let (mut size, mut local) = (size, local);
    let mut at = 0;
    while at + 4 <= extra.len() {
        let id = u16_at(extra, at)?;
        let len = u16_at(extra, at + 2)? as usize;
        if id == 1 {
            let mut field = at + 4;
            if uncompressed == 0xffff_ffff {
                field += 8;
            }
            if size == 0xffff_ffff {
                size = u64_at(extra, field)?;
                field += 8;
            }
            if local == 0xffff_ffff {
                local = u64_at(extra, field)?;
            }
        }
        at += 4 + len;
    }
    Some((size, local))
}

#[cfg(test)]
#[path = "vmfb_tests.rs"]
mod tests;
