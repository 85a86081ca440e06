//! parity's records: everything a command measured, as versioned, typed JSON
//! documents that renderers consume and `parity report` reads back.
//!
//! Executors (`parity check`, `parity bisect`, `parity compare`) produce a
//! [`RunRecord`] (`parity.run-record/2`), a [`BisectRecord`]
//! (`parity.bisect/2`) a [`CompareRecord`] (`parity.compare/1`) or a [`TokensRecord`]
//! (`parity.tokens/1`), and `parity fuzz` a [`FuzzRecord`] (`parity.fuzz/1`);
//! `parity report --history` builds a [`HistoryRecord`] (`parity.history/1`);
//! [`AnyRecord`] reads any of them back by its `schema` field. Every record
//! decides its process exit code through the one table in [`ExitCode`].
//!
//! This crate executes nothing and knows neither clap nor IREE.

#![deny(missing_docs)]

pub mod any;
pub mod any_record;
pub mod baseline;
pub mod bisect;
pub mod common;
pub mod compare;
pub mod consistency;
pub mod criterion;
pub mod dispatches;
pub mod error_map;
pub mod exit;
mod first_divergence;
pub mod float;
pub mod fuzz;
pub mod fuzz_targets;
pub mod history;
pub mod history_dir;
pub mod partition;
pub mod plan;
pub mod run;
pub mod samples;
pub mod samples_more;
pub mod samples_tokens;
pub mod serving;
pub mod serving_targets;
pub mod shard;
pub mod tokens;
pub mod tokens_chain;
pub mod tokens_targets;
pub mod triangulation;
pub mod triangulation_row;

pub use any::{AnyRecord, RecordError};
pub use baseline::{
    Band, BaselineError, BaselineRecord, Change, Metric, MetricChange, OutputChange,
    BASELINE_SCHEMA,
};
pub use bisect::{
    BisectRecord, CheckpointKind, CheckpointRecord, Confirmation, ConfirmationCandidate, CrossCase,
    DivergentOp, DroppedRepair, Equivalence, Evidence, Localisation, OpMetrics, PairedOp, Region,
    RegionOutcome, RepairCandidate, RepairSearch, ReproducerCheck, ReproducerOutput, ShadowRow,
    Strategy, ValueMetrics, VerdictSource, BISECT_SCHEMA,
};
pub use common::{ErrorKind, ErrorRecord, Location, Mode, Status};
pub use compare::{CompareRecord, TensorSource, COMPARE_SCHEMA};
pub use criterion::{Check, CriterionRecord};
pub use dispatches::{
    DispatchEvidence, DispatchOp, DispatchRow, DispatchStage, DispatchesRecord, InsideDispatch,
    InsideVsF64, TraceFidelity, TracedDiff, UnalignedDispatch, DISPATCHES_SCHEMA,
};
pub use error_map::ErrorMap;
pub use exit::ExitCode;
pub use fuzz::{
    ControlRecord, FuzzRecord, InvariantRecord, MinimalCase, MovedElement, ReplayRecord, Violation,
    FUZZ_SCHEMA,
};
pub use fuzz_targets::{triangulate_fuzz, FuzzCross, FuzzTargetSide, FuzzTriangulationRow};
pub use history::{
    Growth, HistoryOrder, HistoryPoint, HistoryRecord, HistoryRun, SavedRun, SkippedRun,
    StageHistory, HISTORY_SCHEMA,
};
pub use history_dir::HistoryError;
pub use plan::{PlanExtent, PlanStage, RunPlan};
pub use run::{
    Divergence, ElementRecord, ModuleProvenance, OracleProvenance, OutputMetrics, OutputRecord,
    Provenance, RunRecord, StageRecord, TargetRecord, TruthRecord, UploadRecord,
    WeightTransformRecord, RUN_RECORD_SCHEMA,
};
pub use serving::{ServingRecord, ServingRequestRecord, ServingVerdict, SERVING_SCHEMA};
pub use serving_targets::{triangulate_serving, ServingTargetSide, ServingTriangulationRow};
pub use shard::{merge, MergeError, Shard, ShardRecord};
pub use tokens::{
    DivergentToken, LayerVsF64, LogitsGate, NoiseMeasurement, NoiseSource, ReferenceNoise,
    StepLocalisation, StepMetrics, TeacherForcedSummary, TokenCaseRecord, TokenFinding, TokenLogit,
    TokenMode, TokenVerdict, TokensRecord, VerdictRule, WrongSide, LAYER_ARBITER_RATIO,
    NOISE_GATE_FACTOR, TOKENS_SCHEMA,
};
pub use tokens_chain::ChainCheck;
pub use tokens_targets::{triangulate_tokens, TokenTargetSide, TokenTriangulationRow};
pub use triangulation::{CrossTarget, TriangulationLabel, TriangulationRow, TriangulationTarget};
