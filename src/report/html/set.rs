//! Saved records of every kind sorted by kind, owned: what `parity report
//! A.json B.json ... --html` puts on one page, and what its other exports
//! (node data) pick from.

use super::HtmlInput;
use parity_record::{
    AnyRecord, BaselineRecord, BisectRecord, DispatchesRecord, FuzzRecord, HistoryRecord,
    RunRecord, ServingRecord, TokensRecord,
};

/// Records by kind, in the order given. Compare records have no section on
/// a page of several (their own page is `parity compare --html`).
#[derive(Clone, Debug, Default)]
pub struct RecordSet {
    /// Run records.
    pub runs: Vec<RunRecord>,
    /// Bisect records.
    pub bisects: Vec<BisectRecord>,
    /// Tokens records.
    pub tokens: Vec<TokensRecord>,
    /// Baseline comparisons.
    pub baselines: Vec<BaselineRecord>,
    /// Serving records.
    pub servings: Vec<ServingRecord>,
    /// Mask fuzzer records.
    pub fuzzes: Vec<FuzzRecord>,
    /// Histories of saved runs.
    pub histories: Vec<HistoryRecord>,
    /// Dispatch diffs.
    pub dispatches: Vec<DispatchesRecord>,
}

impl RecordSet {
    /// Sorts `records` by kind.
    pub fn of<'a>(records: impl IntoIterator<Item = &'a AnyRecord>) -> RecordSet {
        let mut set = RecordSet::default();
        for record in records {
            match record {
                AnyRecord::Run(r) => set.runs.push(r.clone()),
                AnyRecord::Bisect(b) => set.bisects.push(b.clone()),
                AnyRecord::Tokens(t) => set.tokens.push((**t).clone()),
                AnyRecord::Baseline(b) => set.baselines.push(b.clone()),
                AnyRecord::Serving(s) => set.servings.push((**s).clone()),
                AnyRecord::Fuzz(f) => set.fuzzes.push((**f).clone()),
                AnyRecord::History(h) => set.histories.push((**h).clone()),
                AnyRecord::Dispatches(d) => set.dispatches.push((**d).clone()),
                AnyRecord::Compare(_) => {}
            }
        }
        set
    }

    /// The page input over every record of the set.
    pub fn input(&self) -> HtmlInput<'_> {
        HtmlInput {
            runs: &self.runs,
            bisects: &self.bisects,
            tokens: &self.tokens,
            baselines: &self.baselines,
            servings: &self.servings,
            fuzzes: &self.fuzzes,
            histories: &self.histories,
            dispatches: &self.dispatches,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RecordSet;
    use parity_record::{AnyRecord, RunRecord};

    #[test]
    fn records_are_sorted_by_kind_in_the_order_given() {
        let a = RunRecord::new("a.yaml", "0", "t".to_string());
        let b = RunRecord::new("b.yaml", "0", "t".to_string());
        let set = RecordSet::of(&[AnyRecord::Run(a), AnyRecord::Run(b)]);
        let specs: Vec<&str> = set.runs.iter().map(|r| r.spec.as_str()).collect();
        assert_eq!(specs, ["a.yaml", "b.yaml"]);
        assert!(set.bisects.is_empty() && set.histories.is_empty());
        assert_eq!(set.input().runs.len(), 2);
    }
}
