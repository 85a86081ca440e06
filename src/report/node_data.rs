//! Model Explorer node data for a bisect record: per operation of the
//! bisected function, the error in ULPs, with colour thresholds, so the
//! module opens in Model Explorer with the error overlaid; and for a run
//! record ([`render_run`]): per stage function, the operations producing its
//! outputs, with each output's worst ULP error over cases and modes.
//!
//! Format (google-ai-edge/model-explorer, `node_data_builder.py`:
//! `ModelNodeData`, `GraphNodeData`, `NodeDataResult`, `ThresholdItem`):
//! `{graphId: {results: {nodeId: {value, bgColor?}}, thresholds: [{value, bgColor}]}}`,
//! a threshold colouring values up to and including its `value`. The graph id
//! is the function's name and node ids come from the record's `node_ids`
//! (see `bisect::node_ids` for how the explorer numbers operations).
//!
//! Values: the f64 shadow's accumulated ULPs per operation of the region when
//! the shadow ran; otherwise each measured checkpoint's ULPs at its max error;
//! the localised operation's output ULPs in any case. The localised (or
//! flagged) operation is painted red whatever its value.

use parity_record::{BisectRecord, RunRecord, Status};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// Red for the operation bisect names.
const CULPRIT: &str = "#e53935";

/// Renders the node-data JSON, or `None` when the record names no function
/// or carries no node ids (nothing was bisected).
pub fn render(b: &BisectRecord) -> Option<String> {
    let graph = b.function.as_ref()?;
    let ids = b.node_ids.as_ref()?;
    let id = |op: usize| ids.get(op).cloned();
    let mut results = Map::new();
    let mut put = |op: usize, value: f64, culprit: bool| {
        let Some(node) = id(op) else { return };
        let mut r = json!({ "value": finite(value) });
        if culprit {
            r["bgColor"] = json!(CULPRIT);
        }
        results.insert(node, r);
    };
    if b.shadow.is_empty() {
        for c in &b.checkpoints {
            if let (Some(op), Some(m)) = (c.op_index, &c.metrics) {
                put(op, m.ulps_at_max, false);
            }
        }
    }
    for s in &b.shadow {
        put(s.op_index, s.accumulated_ulps, s.flagged);
    }
    if let Some(op) = &b.first_divergent_op {
        // Repair evidence carries no metrics of its own: keep the shadow's
        // value for the op (and paint it).
        let shadow_value = b
            .shadow
            .iter()
            .find(|s| s.op_index == op.op_index)
            .map(|s| s.accumulated_ulps);
        let ulps = match shadow_value {
            Some(v) if op.metrics.output.is_empty() => v,
            _ => op
                .metrics
                .output
                .iter()
                .map(|m| m.ulps_at_max)
                .fold(0.0f64, f64::max),
        };
        put(op.op_index, ulps, true);
    }
    let data = json!({ graph.clone(): graph_data(results) });
    serde_json::to_string_pretty(&data).ok()
}

/// One graph's results with the ULP colour thresholds.
fn graph_data(results: Map<String, Value>) -> Value {
    json!({
        "results": results,
        "thresholds": [
            { "value": 1.0, "bgColor": "#c8e6c9" },
            { "value": 16.0, "bgColor": "#fff59d" },
            { "value": 64.0, "bgColor": "#ffcc80" },
            { "value": f64::MAX, "bgColor": "#ef9a9a" },
        ],
    })
}

/// Node data of a run record. `result_nodes` maps a stage's `function`
/// (`<module>.<function>`, as the record names it) to the explorer node id
/// of the operation producing each of its results, in result order (`None`
/// for a result that is an argument); the CLI builds it from the modules.
/// The graph id is the function's name; an output's value is its worst
/// `max_ulp` over every case and mode, and an output that failed anywhere is
/// painted red. Stages missing from the map (slices, vmfb modules) are left
/// out. `None` when no stage output lands on a node.
pub fn render_run(
    run: &RunRecord,
    result_nodes: &BTreeMap<String, Vec<Option<String>>>,
) -> Option<String> {
    // (function, node) -> (worst ULPs, failed anywhere)
    let mut worst: BTreeMap<(String, String), (f64, bool)> = BTreeMap::new();
    for stage in &run.stages {
        let Some(nodes) = result_nodes.get(&stage.function) else {
            continue;
        };
        let graph = stage
            .function
            .split_once('.')
            .map_or(stage.function.as_str(), |(_, f)| f);
        for (k, out) in stage.outputs.iter().enumerate() {
            let Some(Some(node)) = nodes.get(k) else {
                continue;
            };
            let ulps = out.metrics.as_ref().and_then(|m| m.max_ulp).unwrap_or(0) as f64;
            let e = worst
                .entry((graph.to_string(), node.clone()))
                .or_insert((0.0, false));
            e.0 = e.0.max(ulps);
            e.1 |= out.status == Status::Fail;
        }
    }
    if worst.is_empty() {
        return None;
    }
    let mut graphs: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for ((graph, node), (ulps, failed)) in worst {
        let mut r = json!({ "value": finite(ulps) });
        if failed {
            r["bgColor"] = json!(CULPRIT);
        }
        graphs.entry(graph).or_default().insert(node, r);
    }
    let data: Map<String, Value> = graphs
        .into_iter()
        .map(|(g, results)| (g, graph_data(results)))
        .collect();
    serde_json::to_string_pretty(&Value::Object(data)).ok()
}

/// JSON has no infinity: clamp onto the largest finite value (NaN to it too,
/// since a NaN error is the worst there is).
fn finite(v: f64) -> Value {
    if v.is_finite() {
        json!(v)
    } else {
        json!(f64::MAX)
    }
}
