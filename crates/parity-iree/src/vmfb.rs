//! Reads a vmfb's module name and exported functions straight from its FlatBuffer.
//!
//! eerie 0.7 offers no way to enumerate a loaded module's functions, yet IREE
//! resolves functions only by qualified name (`module.fn`) and a useful "unknown
//! function" error lists what exists. The vmfb layout (IREE 3.13,
//! `runtime/src/iree/schemas/bytecode_module_def.fbs`, file identifier `IREE`) is an
//! optional ZIP local file header, a u32 size prefix, then a `BytecodeModuleDef`.
//! Every offset is bounds-checked: a damaged file yields `None`, never a panic.

/// What parity needs to know about a compiled module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleInfo {
    /// The VM module name (`module` unless the MLIR module was named).
    pub name: String,
    /// Exported functions, in the module's export order.
    pub exports: Vec<ExportInfo>,
}

/// One exported function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportInfo {
    /// The unqualified function name.
    pub name: String,
    /// IREE's ABI declaration (`iree.abi.declaration`), e.g.
    /// `sync func @add(%input0: tensor<4xf32>) -> (%output0: tensor<4xf32>)`.
    pub declaration: Option<String>,
}

const ZIP_LOCAL_HEADER: u32 = 0x0403_4B50;
// Field indices of BytecodeModuleDef.
const FIELD_NAME: usize = 0;
const FIELD_EXPORTED_FUNCTIONS: usize = 7;
const FIELD_FUNCTION_SIGNATURES: usize = 8;

/// Parses the module name and exports, or None when `vmfb` is not a readable module.
pub fn inspect(vmfb: &[u8]) -> Option<ModuleInfo> {
    let fb = flatbuffer(vmfb)?;
    if fb.get(4..8)? != b"IREE" {
        return None;
    }
    let root = Table::at(fb, u32_at(fb, 0)? as usize)?;
    let name = root.string(FIELD_NAME)?;
    let signatures = root
        .vector_of_tables(FIELD_FUNCTION_SIGNATURES)
        .unwrap_or_default();
    let mut exports = Vec::new();
    // Every export may point at one shared string, so a crafted file could make
    // the text returned grow with the square of its size; a real module's strings
    // are distinct, so their total fits in the file (x3 for U+FFFD replacements).
    let mut text_budget = 3 * vmfb.len();
    for export in root
        .vector_of_tables(FIELD_EXPORTED_FUNCTIONS)
        .unwrap_or_default()
    {
        let local_name = export.string(0)?;
        let declaration = export
            .i32_field(1)
            .and_then(|ordinal| usize::try_from(ordinal).ok())
            .and_then(|ordinal| signatures.get(ordinal))
            .and_then(|sig| abi_declaration(sig));
        let len = local_name.len() + declaration.as_ref().map_or(0, String::len);
        text_budget = text_budget.checked_sub(len)?;
        exports.push(ExportInfo {
            name: local_name,
            declaration,
        });
    }
    Some(ModuleInfo { name, exports })
}

/// The FlatBuffer bytes: skips the ZIP local header if present, then the size prefix.
fn flatbuffer(vmfb: &[u8]) -> Option<&[u8]> {
    let mut body = vmfb;
    if u32_at(vmfb, 0)? == ZIP_LOCAL_HEADER {
        let name_len = u16_at(vmfb, 26)? as usize;
        let extra_len = u16_at(vmfb, 28)? as usize;
        body = vmfb.get(30 + name_len + extra_len..)?;
    }
    let len = u32_at(body, 0)? as usize;
    body.get(4..4usize.checked_add(len)?)
}

/// The `iree.abi.declaration` attribute of a FunctionSignatureDef.
fn abi_declaration(sig: &Table<'_>) -> Option<String> {
    sig.vector_of_tables(1)?
        .iter()
        .find(|attr| attr.string(0).as_deref() == Some("iree.abi.declaration"))
        .and_then(|attr| attr.string(1))
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        b.get(at..at.checked_add(2)?)?.try_into().ok()?,
    ))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        b.get(at..at.checked_add(4)?)?.try_into().ok()?,
    ))
}

/// A FlatBuffer table: its position and its vtable's position in `buf`.
#[derive(Clone, Copy)]
struct Table<'a> {
    buf: &'a [u8],
    pos: usize,
    vtable: usize,
}

impl<'a> Table<'a> {
    fn at(buf: &'a [u8], pos: usize) -> Option<Table<'a>> {
        let soffset = u32_at(buf, pos)? as i32 as i64;
        let vtable = usize::try_from(pos as i64 - soffset).ok()?;
        u16_at(buf, vtable)?;
        Some(Table { buf, pos, vtable })
    }

    /// Absolute position of field `i`, or None when absent.
    fn field(&self, i: usize) -> Option<usize> {
        let vt_len = u16_at(self.buf, self.vtable)? as usize;
        let slot = 4 + 2 * i;
        if slot + 2 > vt_len {
            return None;
        }
        let off = u16_at(self.buf, self.vtable + slot)? as usize;
        (off != 0).then_some(self.pos + off)
    }

    /// Follows the uoffset stored at field `i`.
    fn indirect(&self, i: usize) -> Option<usize> {
        let at = self.field(i)?;
        at.checked_add(u32_at(self.buf, at)? as usize)
    }

    fn i32_field(&self, i: usize) -> Option<i32> {
        // An absent scalar holds the schema default, 0.
        match self.field(i) {
            Some(at) => Some(u32_at(self.buf, at)? as i32),
            None => Some(0),
        }
    }

    fn string(&self, i: usize) -> Option<String> {
        let at = self.indirect(i)?;
        let len = u32_at(self.buf, at)? as usize;
        let bytes = self.buf.get(at + 4..(at + 4).checked_add(len)?)?;
        Some(String::from_utf8_lossy(bytes).into_owned())
    }

    fn vector_of_tables(&self, i: usize) -> Option<Vec<Table<'a>>> {
        let at = self.indirect(i)?;
        let len = u32_at(self.buf, at)? as usize;
        // Each element takes 4 bytes, so a bogus length cannot allocate beyond the buffer.
        if len > self.buf.len() / 4 {
            return None;
        }
        (0..len)
            .map(|k| {
                let elem = at + 4 + 4 * k;
                Table::at(
                    self.buf,
                    elem.checked_add(u32_at(self.buf, elem)? as usize)?,
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_none_not_a_panic() {
        assert_eq!(inspect(&[]), None);
        assert_eq!(inspect(b"PK\x03\x04"), None);
        assert_eq!(inspect(&[0xff; 64]), None);
        let mut zipish = vec![0x50, 0x4b, 0x03, 0x04];
        zipish.extend([0xff; 40]);
        assert_eq!(inspect(&zipish), None);
    }

    #[test]
    fn every_prefix_of_garbage_is_safe() {
        let mut bytes: Vec<u8> = (0..200u32).map(|i| (i * 37 % 251) as u8).collect();
        bytes[4..8].copy_from_slice(b"IREE");
        for n in 0..bytes.len() {
            let _ = inspect(&bytes[..n]);
        }
    }
}
