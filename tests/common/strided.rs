//! Every rank's real exchange engine on strided local storage, over the
//! in-memory network: each rank's boxes stored at random strides (any axis
//! order, padding on every axis, gaps before and after), sentinels in every
//! element that is not a box element, and after each execution every output
//! element checked, every sentinel checked untouched, the input checked unchanged.

use distreshape::testing::{
    Endpoint, Exchange, InputStorages, MessageLimits, Mode, Network, Participant, Progress,
    RankPlan, ReadPeers, Storage, Storages, proposed_window_width,
};

use crate::common::engine::{execute_all, to_bytes};

/// What no execution may write, nor leave in an output element.
pub const SENTINEL: u64 = 0xEEEE_EEEE_EEEE_EEEE;

/// Elements of slack before and after every box in its buffer.
pub const SLACK: usize = 3;

/// Random strides for a box of `extents`: `None` (C order without gaps) one time
/// in four, else a random axis order with up to two elements of padding per axis
/// and, one time in four, a step of 2 along the fastest (a view of every other
/// element, as of the real parts of a complex array).
pub fn random_strides(below: &mut dyn FnMut(u64) -> u64, extents: &[u64]) -> Option<Vec<i64>> {
    if below(4) == 0 {
        return None;
    }
    let n = extents.len();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, below(i as u64 + 1) as usize);
    }
    let mut strides = vec![0i64; n];
    let mut weight = if below(4) == 0 { 2 } else { 1 };
    for &k in order.iter().rev() {
        strides[k] = weight;
        weight *= (extents[k] + below(3)) as i64;
    }
    Some(strides)
}

/// A rank's storages from random strides (its input dense with `dense_input`),
/// checked for the plan's element size.
pub fn random_storages(
    below: &mut dyn FnMut(u64) -> u64,
    plan: &RankPlan,
    dense_input: bool,
) -> Storages {
    let side = |extents: Vec<u64>, side, below: &mut dyn FnMut(u64) -> u64| match random_strides(
        below, &extents,
    ) {
        Some(strides) => {
            Storage::new(&extents, &strides, side, plan.elem_size, plan.rank).expect("strides")
        }
        None => Storage::dense(&extents),
    };
    use distreshape::testing::ReshapeSide::{Input, Output};
    Storages {
        input: match dense_input {
            true => Storage::dense(&plan.local_input_shape()),
            false => side(plan.local_input_shape(), Input, below),
        },
        output: side(plan.local_output_shape(), Output, below),
    }
}

/// The buffer position (from the box's first element) of each box element, in
/// the box's C order.
pub fn positions(storage: &Storage) -> Vec<usize> {
    let extents = storage.extents();
    let total: u64 = extents.iter().product();
    (0..total)
        .map(|flat| {
            let (mut rest, mut at) = (flat, 0);
            for k in (0..extents.len()).rev() {
                at += rest % extents[k] * storage.strides()[k];
                rest /= extents[k];
            }
            at as usize
        })
        .collect()
}

/// A buffer holding `values` (a box's elements in C order) where `storage` puts
/// them, after [`SLACK`] elements, sentinels everywhere else.
pub fn stored(storage: &Storage, values: &[u64]) -> Vec<u64> {
    let mut buffer = vec![SENTINEL; SLACK + storage.span() as usize + SLACK];
    for (&at, &v) in positions(storage).iter().zip(values) {
        buffer[SLACK + at] = v;
    }
    buffer
}

/// The box elements of `buffer` in C order, or the first sentinel written over.
pub fn read_back(storage: &Storage, buffer: &[u64]) -> Result<Vec<u64>, String> {
    let positions = positions(storage);
    let mut is_element = vec![false; buffer.len()];
    positions
        .iter()
        .for_each(|&at| is_element[SLACK + at] = true);
    if let Some(at) = (0..buffer.len()).find(|&i| !is_element[i] && buffer[i] != SENTINEL) {
        return Err(format!(
            "a gap was written: element {at} holds {:#x}",
            buffer[at]
        ));
    }
    Ok(positions.iter().map(|&at| buffer[SLACK + at]).collect())
}

/// One strided simulation: the ranks' plans, storages and global indices.
pub struct StridedCase<'a> {
    /// Every rank's plan.
    pub plans: &'a [RankPlan],
    /// Every rank's storages.
    pub storages: &'a [Storages],
    /// Every rank's input box, global indices in C order.
    pub inputs: &'a [Vec<u64>],
    /// Every rank's output box, global indices in C order.
    pub outputs: &'a [Vec<u64>],
}

/// How many streams of a strided simulation read directly.
#[derive(Clone, Copy, Debug, Default)]
pub struct DirectCounts {
    /// Into a strided output.
    pub into_strided: usize,
    /// From a strided input.
    pub from_strided: usize,
    /// From an input with no contiguous axis (a step along its fastest).
    pub from_stepped: usize,
}

/// Runs every rank's real exchange engine out of place on its strided buffers
/// (each rank blocking or not as `nonblocking` says), twice, with `limits` made
/// all-packed as a strided plan makes them, and checks every output element,
/// every gap and the input. The pairs that `direct_pairs` names (bit `(7 a +
/// 13 b) % 64` for ranks `a < b`) read each other directly, as a plan lets
/// them (by every rank's input storage where some input is strided); the
/// network then sees exactly the bytes of the other streams, plus 8 per
/// control message. Returns how many streams read directly into strided
/// outputs, from strided inputs, and from inputs with a step.
pub fn run_strided_exchange(
    case: &StridedCase<'_>,
    limits: MessageLimits,
    nonblocking: &[bool],
    keep_budget: usize,
    direct_pairs: u64,
    context: &dyn Fn() -> String,
) -> DirectCounts {
    let p = case.plans.len();
    let inputs = input_storages(case);
    let reads = move |a: usize, b: usize| {
        let (a, b) = (a.min(b), a.max(b));
        a != b && direct_pairs >> ((7 * a + 13 * b) % 64) & 1 == 1
    };
    let network = Network::with_direct_reads(p, reads);
    let width = (case.plans.iter())
        .map(|plan| proposed_window_width(plan, p, 2).expect("distances"))
        .min()
        .expect("one rank at least");
    let mut exchanges: Vec<Exchange<Endpoint>> = (case.plans.iter().zip(case.storages))
        .map(|(plan, storages)| {
            let progress = Progress::for_path(plan.path, width);
            let limits = limits.all_packed();
            let storages = storages.clone();
            let peers = ReadPeers {
                reads_from: |peer| reads(plan.rank, peer),
                inputs: inputs.as_ref(),
            };
            Exchange::new(plan, p, limits, 2, progress, keep_budget, peers, storages)
                .expect("exchange")
        })
        .collect();
    let rank_run = |r: usize, exchange: &mut _, endpoint: &_| {
        execute_strided(case, r, nonblocking[r], exchange, endpoint)
    };
    for _ in 0..2 {
        let report = execute_all(&network, &mut exchanges, case.outputs, rank_run, context);
        for (r, plan) in case.plans.iter().enumerate() {
            let direct = exchanges[r].direct_streams();
            let moved = report.received[r] + report.read[r];
            let expected = plan.stats().bytes_received + direct.control_bytes_received(1);
            assert_eq!(
                report.read[r],
                direct.bytes_read,
                "rank {r} read: {}",
                context()
            );
            assert_eq!(moved, expected, "rank {r}: {}", context());
        }
    }
    // The streams a rank reads land in its output; those it is read in come
    // from its input.
    let count = |strided: &dyn Fn(&Storages) -> bool, reads: bool| {
        (exchanges.iter().zip(case.storages))
            .filter(|(_, s)| strided(s))
            .map(|(e, _)| {
                let direct = e.direct_streams();
                if reads {
                    direct.reads
                } else {
                    direct.count - direct.reads
                }
            })
            .sum()
    };
    DirectCounts {
        into_strided: count(&|s| !s.output.is_dense(), true),
        from_strided: count(&|s| !s.input.is_dense(), false),
        from_stepped: count(
            &|s| !s.input.is_dense() && !s.input.strides().contains(&1),
            false,
        ),
    }
}

/// Every rank's input storage, as a plan gathers it, when some rank's input
/// is strided.
fn input_storages(case: &StridedCase<'_>) -> Option<InputStorages> {
    if case.storages.iter().all(|s| s.input.is_dense()) {
        return None;
    }
    let plan = &case.plans[0];
    let strides: Vec<i64> = (case.storages.iter())
        .flat_map(|s| s.input.strides().iter().map(|&k| k as i64))
        .collect();
    let inputs = InputStorages::new(plan.layouts.input(), &strides, plan.elem_size);
    Some(inputs.expect("every rank's strides were checked"))
}

/// Rank `r`'s out-of-place execution of its exchange on its strided buffers;
/// returns its output box elements in C order once the gaps and the input are
/// checked.
fn execute_strided<'n>(
    case: &StridedCase<'_>,
    r: usize,
    nonblocking: bool,
    exchange: &mut Exchange<Endpoint<'n>>,
    endpoint: &Endpoint<'n>,
) -> Result<Vec<u8>, String> {
    let storages = &case.storages[r];
    let input = stored(&storages.input, &case.inputs[r]);
    let mut output = stored(&storages.output, &[]);
    let on = Participant {
        plan: &case.plans[r],
        transport: endpoint,
    };
    let (src, dst) = (
        input[SLACK..].as_ptr().cast(),
        output[SLACK..].as_mut_ptr().cast(),
    );
    // SAFETY: each buffer holds its storage's span after the slack; they are
    // distinct and outlive the execution, which completes (or is abandoned)
    // before this returns.
    let result = unsafe {
        match nonblocking {
            false => exchange.run(on, Mode::AllOutOfPlace, Vec::new(), src, dst),
            true => exchange
                .begin(on, Mode::AllOutOfPlace, Vec::new(), src, dst)
                .and_then(|mut done| {
                    while !done {
                        endpoint.wait_for_progress()?;
                        done = exchange.advance(on, false)?;
                    }
                    Ok(())
                }),
        }
    };
    result.map_err(|e| format!("rank {r}: {e}"))?;
    if input != stored(&storages.input, &case.inputs[r]) {
        return Err(format!("rank {r}: the input changed"));
    }
    read_back(&storages.output, &output).map(|values| to_bytes(&values))
}
