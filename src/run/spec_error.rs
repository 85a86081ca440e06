//! The run record of a spec that could not be loaded: `parity check` writes
//! it anyway, so the previous run's reports are replaced by one that says
//! what is wrong and where, not published again as this run's.

use parity_record::{ErrorRecord, Location, RunPlan, RunRecord, Shard, ShardRecord};
use std::path::Path;

/// A run record carrying one input error, `invalid spec: {error}`, located
/// from the error's diagnostic; a shard's record also says which shard and
/// the spec's hash, with an empty plan, so a merge names the broken shard.
pub fn spec_error_record(
    path: &Path,
    error: &dyn std::fmt::Display,
    shard: Option<Shard>,
) -> RunRecord {
    let file = path.display().to_string();
    let message = format!("invalid spec: {error}");
    let mut record = RunRecord::new(&file, env!("CARGO_PKG_VERSION"), super::now_rfc3339());
    record
        .errors
        .push(ErrorRecord::input(message).at(Location::from_diagnostic(&file, &error.to_string())));
    record.status = record.derived_status();
    record.shard = shard.map(|s| ShardRecord {
        index: s.index,
        count: s.count,
        spec_sha256: super::spec_sha256(path),
        plan: RunPlan::default(),
    });
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use parity_record::{ExitCode, Status};

    #[test]
    fn the_record_is_one_input_error_naming_the_spec_and_its_shard() {
        let shard = Shard { index: 2, count: 3 };
        let record = spec_error_record(
            Path::new("no/such/stages.yaml"),
            &"stages.yaml:4:2: unknown field `modul`",
            Some(shard),
        );
        assert_eq!(record.errors.len(), 1);
        assert_eq!(
            record.errors[0].message,
            "invalid spec: stages.yaml:4:2: unknown field `modul`"
        );
        assert_eq!(record.status, Status::Error);
        assert_eq!(record.exit_code(), ExitCode::Input);
        let s = record.shard.expect("a shard's record says which shard");
        assert_eq!((s.index, s.count), (2, 3));
        // The hash of an unreadable file is the empty input's.
        assert_eq!(
            s.spec_sha256,
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert!(spec_error_record(Path::new("x.yaml"), &"bad", None)
            .shard
            .is_none());
    }
}
