//! Batches through every rank's real exchange engine over the in-memory network:
//! `k` fields moved by one execution, each field's buffers (dense or strided)
//! with sentinels before, after and in every gap, field `f` filled with the
//! global indices plus `f` times [`FIELD_OFFSET`]; after each execution every
//! element of every field is checked, every sentinel checked untouched and
//! every input checked unchanged.

use distreshape::testing::{
    Endpoint, Exchange, FieldBuffers, MessageLimits, Mode, Network, NetworkReport, Participant,
    Progress, RankPlan, ReadPeers, Storages, proposed_window_width,
};

use crate::common::engine::{complete_begun, execute_all, to_bytes};
use crate::common::strided::{SLACK, read_back, stored};

/// What field `f`'s elements hold beyond the global index: `f` times this.
pub const FIELD_OFFSET: u64 = 1 << 40;

/// One batch simulation: the ranks' plans, storages and global indices, and
/// how many fields.
pub struct BatchCase<'a> {
    /// Every rank's plan.
    pub plans: &'a [RankPlan],
    /// Every rank's storages (dense or strided).
    pub storages: &'a [Storages],
    /// Every rank's input box, global indices in C order.
    pub inputs: &'a [Vec<u64>],
    /// Every rank's output box, global indices in C order.
    pub outputs: &'a [Vec<u64>],
    /// Fields per batch.
    pub fields: usize,
}

/// How the ranks' exchanges are built for a batch simulation.
#[derive(Clone, Copy, Debug)]
pub struct BatchEngine {
    /// Message limits (made all-packed when some storage is strided).
    pub limits: MessageLimits,
    /// Peers per window.
    pub window: usize,
    /// Messages per stream and round.
    pub per_round: usize,
    /// Segments and copies kept at creation.
    pub keep_budget: usize,
    /// Which pairs of ranks read each other directly (bit `(7 a + 13 b) % 64`
    /// for ranks `a < b`), when every input is dense.
    pub direct_pairs: u64,
}

/// Every rank's exchange for `engine`.
pub fn batch_exchanges<'n>(
    case: &BatchCase<'_>,
    engine: BatchEngine,
) -> Vec<Exchange<Endpoint<'n>>> {
    let p = case.plans.len();
    let strided = case
        .storages
        .iter()
        .any(|s| !s.input.is_dense() || !s.output.is_dense());
    let inputs_dense = case.storages.iter().all(|s| s.input.is_dense());
    let limits = match strided {
        true => engine.limits.all_packed(),
        false => engine.limits,
    };
    let width = (case.plans.iter())
        .map(|plan| proposed_window_width(plan, p, engine.window).expect("distances"))
        .min()
        .expect("one rank at least");
    (case.plans.iter().zip(case.storages))
        .map(|(plan, storages)| {
            let progress = Progress::for_path(plan.path, width);
            let reads = ReadPeers {
                reads_from: |peer: usize| {
                    let (a, b) = (plan.rank.min(peer), plan.rank.max(peer));
                    inputs_dense
                        && a != b
                        && engine.direct_pairs >> ((7 * a + 13 * b) % 64) & 1 == 1
                },
                inputs: None,
            };
            Exchange::new(
                plan,
                p,
                limits,
                engine.per_round,
                progress,
                engine.keep_budget,
                reads,
                storages.clone(),
            )
            .expect("exchange")
        })
        .collect()
}

/// Runs one batch of `case.fields` fields on every rank's exchange (each rank
/// blocking or not as `nonblocking` says; every rank out of place, in `mode`),
/// checks every element, gap and input, and returns what the network saw.
pub fn run_batch<'n>(
    case: &BatchCase<'_>,
    network: &'n Network,
    exchanges: &mut [Exchange<Endpoint<'n>>],
    (mode, nonblocking): (Mode, &[bool]),
    context: &dyn Fn() -> String,
) -> NetworkReport {
    let expected: Vec<Vec<u64>> = (case.outputs.iter())
        .map(|out| (0..case.fields).flat_map(|f| shifted(out, f)).collect())
        .collect();
    let rank_run = |r: usize, exchange: &mut _, endpoint: &_| {
        execute_batch(case, r, (mode, nonblocking[r]), exchange, endpoint)
    };
    execute_all(network, exchanges, &expected, rank_run, context)
}

/// `values` plus field `f`'s offset.
fn shifted(values: &[u64], f: usize) -> impl Iterator<Item = u64> + '_ {
    values.iter().map(move |v| v + f as u64 * FIELD_OFFSET)
}

/// Rank `r`'s batch on its exchange; returns every field's output box elements
/// in C order, field after field, once the gaps and the inputs are checked.
fn execute_batch<'n>(
    case: &BatchCase<'_>,
    r: usize,
    (mode, nonblocking): (Mode, bool),
    exchange: &mut Exchange<Endpoint<'n>>,
    endpoint: &Endpoint<'n>,
) -> Result<Vec<u8>, String> {
    let storages = &case.storages[r];
    let input_of = |f| {
        stored(
            &storages.input,
            &shifted(&case.inputs[r], f).collect::<Vec<_>>(),
        )
    };
    let inputs: Vec<Vec<u64>> = (0..case.fields).map(input_of).collect();
    let mut outputs: Vec<Vec<u64>> = (0..case.fields)
        .map(|_| stored(&storages.output, &[]))
        .collect();
    let input_ptrs: Vec<*const u8> = inputs.iter().map(|b| b[SLACK..].as_ptr().cast()).collect();
    let output_ptrs: Vec<*mut u8> = (outputs.iter_mut())
        .map(|b| b[SLACK..].as_mut_ptr().cast())
        .collect();
    let on = Participant {
        plan: &case.plans[r],
        transport: endpoint,
    };
    let buffers = FieldBuffers {
        inputs: &input_ptrs,
        outputs: &output_ptrs,
    };
    // SAFETY: each buffer holds its storage's span after the slack; they are
    // distinct and outlive the execution, which completes (or is abandoned)
    // before this returns.
    let result = unsafe {
        match nonblocking {
            false => exchange.run_batch(on, mode, buffers),
            true => {
                let started = exchange.begin_batch(on, mode, buffers);
                complete_begun(exchange, on, started)
            }
        }
    };
    if let Err(e) = result {
        exchange.abandon(endpoint);
        return Err(format!("rank {r}: {e}"));
    }
    for (f, input) in inputs.iter().enumerate() {
        if *input != input_of(f) {
            return Err(format!("rank {r}: field {f}'s input changed"));
        }
    }
    let mut values = Vec::new();
    for (f, output) in outputs.iter().enumerate() {
        let field = read_back(&storages.output, output).map_err(|e| format!("field {f}: {e}"))?;
        values.extend(field);
    }
    Ok(to_bytes(&values))
}
