//! Simulates whole grid redistributions in one process (issue 18): random input and
//! output grid layouts of the same ranks, shapes related by NumPy reshapes, every
//! rank's input buffer filled with the global flat indices it holds, every receiver's
//! transfers applied with the shared runs and the local offsets on both sides. Checks
//! that every output element arrives exactly once and is right, that sender and
//! receiver lists agree, that no rank sends to itself, and that "nothing moves" is exact.

// The oracles spell out `%` and index loops on purpose, independent of the library.
#![allow(clippy::manual_is_multiple_of, clippy::needless_range_loop)]

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use distreshape::testing::{
    BlockLengths, GridBox, GridLayout, MessageCutter, MessageKind, MessageLimits, Messages, Mode,
    Network, Placement, RankPlan, Redistribution, RegionRuns, ReshapeSide, Run, Segment, Storage,
    Storages, StridedRuns, nothing_moves,
};

use common::STRIDED_RUNS;
use common::batch::{BatchCase, BatchEngine, batch_exchanges, run_batch};
use common::engine::{Engine, RankRun, dense_storages, run_failing_reads, run_real_exchange};
use common::fused::{FusedPart, FusedSeen, run_fused};
use common::inplace::run_in_place;
use common::strided::{StridedCase, random_storages, run_strided_exchange};

/// Simulated cases; each builds and applies every rank's lists.
const CASES: u64 = 4000;

/// Cases run through every rank's real exchange engine (a thread each).
const ENGINE_CASES: u64 = 600;

/// Random cases through the real exchange on strided storage: more, so that
/// every way of reading a strided input directly comes up tens of times.
const STRIDED_ENGINE_CASES: u64 = 3 * ENGINE_CASES;

/// Random batches run through every rank's real exchange engine.
const BATCH_CASES: u64 = 400;

/// Random fused executions of several plans through every rank's real
/// exchange engines.
const FUSED_CASES: u64 = 600;

/// Random grid redistributions whose in-place schedules run on every rank's real
/// in-place engine.
const IN_PLACE_CASES: u64 = 1500;

/// A small deterministic generator (seeded: every run checks the same cases).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }

    fn chance(&mut self, one_in: u64) -> bool {
        self.below(one_in) == 0
    }
}

/// Global flat indices of a box of `shape`, in the box's C order (plain loops).
fn box_members(shape: &[u64], b: &GridBox) -> Vec<u64> {
    if b.extents.contains(&0) {
        return Vec::new();
    }
    let mut out = vec![0u64];
    for a in 0..shape.len() {
        let axis = b.offsets[a]..b.offsets[a] + b.extents[a];
        out = out
            .iter()
            .flat_map(|&g| axis.clone().map(move |c| g * shape[a] + c))
            .collect();
    }
    out
}

/// A random factorization of `p` into `k` grid axes (1s included).
/// Every rank's elements of `l` (global flat indices, in local order).
fn members(l: &GridLayout) -> Vec<Vec<u64>> {
    (0..l.nranks())
        .map(|r| box_members(l.shape(), &l.rank_box(r)))
        .collect()
}

fn grid_dims(rng: &mut Rng, p: u64) -> Vec<i64> {
    let k = 1 + rng.below(4) as usize;
    let mut dims = vec![1i64; k];
    let mut rest = p;
    let mut f = 2;
    while rest > 1 {
        while rest % f != 0 {
            f += 1;
        }
        dims[rng.below(k as u64) as usize] *= f as i64;
        rest /= f;
    }
    dims
}

/// A random grid layout of `shape` on `p` ranks: some axes split over distinct grid
/// axes (balanced or in random lengths with empty blocks), the other grid axes
/// replicating.
fn layout(rng: &mut Rng, shape: &[u64], p: u64) -> GridLayout {
    let dims = grid_dims(rng, p);
    let mut free: Vec<usize> = (0..dims.len()).collect();
    let mut axis_grid = vec![None; shape.len()];
    let mut lengths = vec![BlockLengths::Balanced; shape.len()];
    for a in 0..shape.len() {
        if free.is_empty() || rng.chance(3) {
            continue;
        }
        let g = free.remove(rng.below(free.len() as u64) as usize);
        axis_grid[a] = Some(g);
        if rng.chance(2) {
            lengths[a] = BlockLengths::Explicit(random_lengths(rng, shape[a], dims[g] as usize));
        }
    }
    GridLayout::new(shape, &dims, &axis_grid, &lengths, p as usize).unwrap()
}

/// `n` block lengths adding up to `extent`, often with empty blocks.
fn random_lengths(rng: &mut Rng, extent: u64, n: usize) -> Vec<i64> {
    let mut cuts: Vec<u64> = (0..n - 1).map(|_| rng.below(extent + 1)).collect();
    cuts.sort_unstable();
    cuts.push(extent);
    let mut prev = 0;
    cuts.iter()
        .map(|&c| {
            let len = c - prev;
            prev = c;
            len as i64
        })
        .collect()
}

/// A random input shape: 1 to 4 axes of small extents, units and rarely zeros.
fn input_shape(rng: &mut Rng) -> Vec<u64> {
    let ndims = 1 + rng.below(4) as usize;
    (0..ndims)
        .map(|_| match rng.below(12) {
            0 => 1,
            1 if rng.chance(4) => 0,
            _ => 2 + rng.below(5),
        })
        .collect()
}

/// A NumPy reshape of `shape`: the same, or 1 to 4 axes, each a divisor of what is
/// left, the one written `-1` resolved to the rest. A zero-size array takes any
/// extents with a 0 where the `-1` was.
fn reshaped(rng: &mut Rng, shape: &[u64]) -> Vec<u64> {
    if rng.chance(4) {
        return shape.to_vec();
    }
    let total: u64 = shape.iter().product();
    let ndims = 1 + rng.below(4) as usize;
    let inferred = rng.below(ndims as u64) as usize;
    let mut new_shape = vec![0u64; ndims];
    let mut rest = total;
    for i in (0..ndims).filter(|&i| i != inferred) {
        new_shape[i] = if total == 0 {
            rng.below(4)
        } else {
            let divisors: Vec<u64> = (1..=rest).filter(|d| rest % d == 0).collect();
            divisors[rng.below(divisors.len() as u64) as usize]
        };
        rest /= new_shape[i].max(1);
    }
    new_shape[inferred] = rest;
    new_shape
}

/// Every rank's list as a map (sender, receiver) → elements.
fn pairs(lists: impl Iterator<Item = (usize, usize, u64)>) -> BTreeMap<(usize, usize), u64> {
    let mut map = BTreeMap::new();
    for (s, r, elems) in lists {
        assert!(s != r, "rank {s} lists itself");
        assert!(
            map.insert((s, r), elems).is_none(),
            "pair {s}->{r} listed twice"
        );
    }
    map
}

/// Counts of what one case exercised.
#[derive(Default, Debug)]
struct Seen {
    transfers: u64,
    nothing_moves: u64,
    replicated_inputs: u64,
    reshapes: u64,
    many_to_many: u64,
    empty_blocks: u64,
}

/// True when some group of the reshape has several non-unit axes on both sides.
fn has_many_to_many(plan: &Redistribution) -> bool {
    let groups = plan.groups();
    let non_unit = |side: ReshapeSide, axes: std::ops::Range<usize>| {
        axes.filter(|&a| groups.shape(side)[a] > 1).count()
    };
    groups.groups().iter().any(|g| {
        non_unit(ReshapeSide::Input, g.input_axes.clone()) > 1
            && non_unit(ReshapeSide::Output, g.output_axes.clone()) > 1
    })
}

fn simulate(plan: &Redistribution, seen: &mut Seen, ctx: &str) {
    let p = plan.input().nranks();
    let (input, output) = (plan.input(), plan.output());
    let inputs: Vec<Vec<u64>> = (0..p)
        .map(|r| box_members(input.shape(), &input.rank_box(r)))
        .collect();
    let receives = pairs((0..p).flat_map(|r| {
        let list = plan.receives(r);
        assert!(list.windows(2).all(|w| w[0].peer < w[1].peer), "{ctx}");
        list.into_iter().map(move |t| (t.peer, r, t.elems))
    }));
    let sends = pairs((0..p).flat_map(|s| {
        let list = plan.sends(s);
        assert!(list.windows(2).all(|w| w[0].peer < w[1].peer), "{ctx}");
        list.into_iter().map(move |t| (s, t.peer, t.elems))
    }));
    assert_eq!(sends, receives, "sender and receiver lists differ: {ctx}");
    seen.transfers += receives.len() as u64;
    let mut all_stay = true;
    for r in 0..p {
        let want = box_members(output.shape(), &output.rank_box(r));
        let mut out = vec![u64::MAX; want.len()];
        let sources: Vec<(usize, u64)> = receives
            .iter()
            .filter(|((_, to), _)| *to == r)
            .map(|(&(from, _), &elems)| (from, elems))
            .collect();
        // One replica per input box, never a replica of the receiver's own box.
        for (i, &(from, _)) in sources.iter().enumerate() {
            assert!(
                !input.same_box(from, r),
                "{r} receives its own box from {from}: {ctx}"
            );
            let twice = sources[..i]
                .iter()
                .any(|&(other, _)| input.same_box(other, from));
            assert!(!twice, "{r} takes one box from two replicas: {ctx}");
        }
        let local = (r, plan.local_elements(r));
        for (from, elems) in sources.into_iter().chain(std::iter::once(local)) {
            let moved = apply(plan, from, r, &inputs[from], &mut out, ctx);
            assert_eq!(moved, elems, "{from}->{r}: {ctx}");
        }
        assert_eq!(out, want, "rank {r} output: {ctx}");
        all_stay &= inputs[r] == want;
    }
    assert_eq!(nothing_moves(plan), all_stay, "{ctx}");
    if all_stay {
        assert!(sends.is_empty(), "{ctx}");
        seen.nothing_moves += 1;
    }
}

/// Copies what `from` sends `to` (its local copy when they are the same rank) into
/// `out` along the shared runs, each element into a slot still unwritten; returns the
/// elements copied. Checks the runs: maximal, increasing, and the same decreasing.
fn apply(
    plan: &Redistribution,
    from: usize,
    to: usize,
    src: &[u64],
    out: &mut [u64],
    ctx: &str,
) -> u64 {
    let (a, b) = (plan.input_region(from), plan.output_region(to));
    let runs: Vec<Run> = plan.runs(from, to).collect();
    let mut down: Vec<Run> = RegionRuns::new(&a, &b).descending().collect();
    down.reverse();
    assert_eq!(down, runs, "{ctx}");
    assert!(
        runs.windows(2)
            .all(|w| w[0].global + w[0].len < w[1].global),
        "{ctx}"
    );
    for run in &runs {
        let (s, d) = (
            a.local_offset(run.global) as usize,
            b.local_offset(run.global) as usize,
        );
        for i in 0..run.len as usize {
            assert_eq!(
                out[d + i],
                u64::MAX,
                "element {} arrives twice: {ctx}",
                run.global
            );
            out[d + i] = src[s + i];
        }
    }
    runs.iter().map(|r| r.len).sum()
}

#[test]
fn random_grid_redistributions_deliver_every_element_once() {
    let mut rng = Rng(0x5eed);
    let mut seen = Seen::default();
    for case in 0..CASES {
        let p = 1 + rng.below(12);
        let shape = input_shape(&mut rng);
        let new_shape = reshaped(&mut rng, &shape);
        let input = layout(&mut rng, &shape, p);
        let output = layout(&mut rng, &new_shape, p);
        seen.replicated_inputs += u64::from(input.replica_count() > 1);
        seen.reshapes += u64::from(shape != new_shape);
        let ctx = format!("case {case}: {input:?} -> {output:?}");
        let empty = |l: &GridLayout| (0..l.nranks()).any(|r| l.elements(r) == 0);
        seen.empty_blocks += u64::from(empty(&input) || empty(&output));
        let plan = Redistribution::new(input, output).unwrap();
        seen.many_to_many += u64::from(has_many_to_many(&plan));
        simulate(&plan, &mut seen, &ctx);
    }
    eprintln!("{CASES} cases: {seen:?}");
    assert!(seen.transfers > CASES && seen.nothing_moves > CASES / 50);
    assert!(seen.replicated_inputs > CASES / 4 && seen.reshapes > CASES / 2);
    assert!(seen.many_to_many > CASES / 50 && seen.empty_blocks > CASES / 4);
}

/// Small random message limits (8-byte elements), so that streams cut many messages,
/// direct and packed, over several rounds.
fn small_limits(rng: &mut Rng) -> MessageLimits {
    let max_bytes = 8 * (1 + rng.below(12) as usize);
    MessageLimits {
        max_bytes,
        direct_bytes: max_bytes.min(8 * (1 + rng.below(3) as usize)),
        strided_short_bytes: 8 * (1 + rng.below(3) as usize),
        packed_bytes: max_bytes,
        max_runs: 1 + rng.below(4) as usize,
        strided_runs: STRIDED_RUNS[rng.below(STRIDED_RUNS.len() as u64) as usize],
        packs_all: false,
        field_message_bytes: [8 * (1 + rng.below(12) as usize), usize::MAX][rng.below(2) as usize],
    }
}

/// Roomy random message limits (8-byte elements): every message of the
/// simulations' small arrays, a batch's too, fits one packed message; runs of a
/// few elements or more travel straight.
fn roomy_limits(rng: &mut Rng) -> MessageLimits {
    MessageLimits {
        max_bytes: 1 << 20,
        direct_bytes: 8 * (1 + rng.below(16) as usize),
        strided_short_bytes: 8 * (1 + rng.below(3) as usize),
        packed_bytes: 1 << 20,
        max_runs: [2, 1 << 10][rng.below(2) as usize],
        strided_runs: STRIDED_RUNS[rng.below(STRIDED_RUNS.len() as u64) as usize],
        packs_all: false,
        field_message_bytes: [8 * (1 + rng.below(16) as usize), 1 << 20][rng.below(3) as usize / 2],
    }
}

/// A random engine for `p` ranks: windows of 1-3 peers, 1-3 messages per round,
/// kept or cut lists, no, every or some pairs of ranks reading each other
/// directly, two executions with each rank's own choice of in place and
/// non-blocking (every rank out of place in one execution of three, so that the
/// direct reads run).
fn random_engine(rng: &mut Rng, p: usize) -> Engine {
    let mut execution = || {
        let all_out_of_place = rng.chance(3);
        let mut run = || RankRun {
            in_place: !all_out_of_place && rng.chance(2),
            nonblocking: rng.chance(2),
        };
        (0..p).map(|_| run()).collect()
    };
    let executions = (0..2).map(|_| execution()).collect();
    let direct_pairs = match rng.below(3) {
        0 => 0,
        1 => u64::MAX,
        _ => (0..64).fold(0, |bits, i| bits | rng.below(2) << i),
    };
    Engine {
        window: 1 + rng.below(3) as usize,
        per_round: 1 + rng.below(3) as usize,
        keep_budget: [0, 3, 1 << 20][rng.below(3) as usize],
        executions,
        direct_pairs,
        panic_first: false,
    }
}

/// A random grid redistribution over 1-8 ranks: every rank's plan, and the
/// global indices of its input and output.
struct RandomPlans {
    plans: Vec<RankPlan>,
    inputs: Vec<Vec<u64>>,
    outputs: Vec<Vec<u64>>,
    context: String,
}

/// Draws the random grid redistribution of case `case`.
fn random_plans(rng: &mut Rng, case: u64) -> RandomPlans {
    let p = 1 + rng.below(8);
    let shape = input_shape(rng);
    random_plans_of(rng, case, &shape, p, 8)
}

/// A random grid redistribution of an array of `shape` (reshaped at random)
/// over `p` ranks, of elements of `elem_size` bytes.
fn random_plans_of(
    rng: &mut Rng,
    case: u64,
    shape: &[u64],
    p: u64,
    elem_size: usize,
) -> RandomPlans {
    let new_shape = reshaped(rng, shape);
    let (input, output) = (layout(rng, shape, p), layout(rng, &new_shape, p));
    let (inputs, outputs) = (members(&input), members(&output));
    let context = format!("case {case}: {elem_size} B {input:?} -> {output:?}");
    let layouts = Arc::new(Redistribution::new(input, output).unwrap());
    let plans = (0..p as usize)
        .map(|r| RankPlan::for_layouts(layouts.clone(), elem_size, r).expect("plan"))
        .collect();
    RandomPlans {
        plans,
        inputs,
        outputs,
        context,
    }
}

/// Every rank's real exchange engine (the library's, over an in-memory network) on
/// random grid redistributions: no execution deadlocks, whatever window, round
/// size and mix of in place and non-blocking the ranks use, and every output
/// element arrives exactly once and right.
#[test]
fn real_exchange_delivers_random_grid_redistributions() {
    let mut rng = Rng(0x9e1d);
    for case in 0..ENGINE_CASES {
        let c = random_plans(&mut rng, case);
        let p = c.plans.len();
        let (limits, engine) = (small_limits(&mut rng), random_engine(&mut rng, p));
        run_real_exchange(&c.plans, &c.inputs, &c.outputs, limits, &engine, &|| {
            c.context.clone()
        });
    }
}

/// Every rank's real exchange engine on random grid redistributions (reshapes,
/// slabs, replication, empty blocks, 1-8 ranks) with each rank's boxes stored at
/// random strides (any axis order, padding on every axis, a step along the
/// fastest, or C order): every output element arrives right, no gap of either
/// buffer is touched, the input is unchanged, and a rank receives exactly the
/// bytes its plan says (a local transpose sends nothing), blocking or not,
/// lists kept or cut.
#[test]
fn real_exchange_delivers_random_redistributions_on_strided_storage() {
    let (mut rng, mut into_strided, mut from_strided, mut from_stepped) = (Rng(0x57d1), 0, 0, 0);
    for case in 0..STRIDED_ENGINE_CASES {
        let c = random_plans(&mut rng, case);
        let p = c.plans.len();
        let dense_inputs = rng.chance(2);
        let mut below = |n| rng.below(n);
        let storages: Vec<_> = (c.plans.iter())
            .map(|plan| random_storages(&mut below, plan, dense_inputs))
            .collect();
        let nonblocking: Vec<bool> = (0..p).map(|_| rng.chance(2)).collect();
        let (limits, keep) = (
            small_limits(&mut rng),
            [0, 3, 1 << 20][rng.below(3) as usize],
        );
        let strided = StridedCase {
            plans: &c.plans,
            storages: &storages,
            inputs: &c.inputs,
            outputs: &c.outputs,
        };
        let direct_pairs = [0, u64::MAX, rng.below(u64::MAX)][rng.below(3) as usize];
        let context = || {
            format!(
                "{} storages {storages:?} direct {direct_pairs:#x}",
                c.context
            )
        };
        let counts =
            run_strided_exchange(&strided, limits, &nonblocking, keep, direct_pairs, &context);
        into_strided += counts.into_strided;
        from_strided += counts.from_strided;
        from_stepped += counts.from_stepped;
    }
    assert!(
        into_strided > 300 && from_strided > 50 && from_stepped > 10,
        "{into_strided} streams read into strided outputs, {from_strided} from strided \
         inputs, {from_stepped} from inputs with a step"
    );
}

/// Batches of 1-5 fields through every rank's real exchange engine on random
/// grid redistributions (reshapes, replication, empty blocks, 1-8 ranks), dense
/// or strided, blocking or not, lists kept or cut, small or roomy message
/// limits, twice each: every element of every field arrives right, no sentinel
/// is touched, every input is unchanged, and a rank receives exactly the fields
/// times its plan's bytes, in messages or by direct reads of every field
/// (with announcements of 8 bytes per field). With roomy limits
/// (every field's part of every message fits one) a batch posts exactly the
/// messages of one array between every pair of ranks when no field's part of
/// a message reaches [`MessageLimits::field_message_bytes`] (1 MiB), and
/// otherwise at least as many and at most one per field for each (the
/// messages whose part of a field reaches it travel one per field).
#[test]
fn real_exchange_delivers_random_batches() {
    let mut rng = Rng(0xba7c);
    let mut seen = [0u64; 5];
    for case in 0..BATCH_CASES {
        let c = random_plans(&mut rng, case);
        let p = c.plans.len();
        let fields = 1 + rng.below(5) as usize;
        let (strided, dense_inputs) = (rng.chance(3), rng.chance(2));
        let mut below = |n| rng.below(n);
        let storages: Vec<Storages> = (c.plans.iter())
            .map(|plan| match strided {
                true => random_storages(&mut below, plan, dense_inputs),
                false => Storages {
                    input: Storage::dense(&plan.local_input_shape()),
                    output: Storage::dense(&plan.local_output_shape()),
                },
            })
            .collect();
        let roomy = rng.chance(2);
        let engine = BatchEngine {
            limits: match roomy {
                true => roomy_limits(&mut rng),
                false => small_limits(&mut rng),
            },
            window: 1 + rng.below(3) as usize,
            per_round: [1, 2, 3, 5][rng.below(4) as usize],
            keep_budget: [0, 3, 1 << 20][rng.below(3) as usize],
            direct_pairs: [0, u64::MAX, rng.below(u64::MAX)][rng.below(3) as usize],
        };
        let nonblocking: Vec<bool> = (0..p).map(|_| rng.chance(2)).collect();
        let batch = BatchCase {
            plans: &c.plans,
            storages: &storages,
            inputs: &c.inputs,
            outputs: &c.outputs,
            fields,
        };
        let context = || format!("{fields} fields, {engine:?} {storages:?} {}", c.context);
        let inputs_dense = storages.iter().all(|s| s.input.is_dense());
        let network = Network::with_direct_reads(p, |a, b| {
            inputs_dense && engine.direct_pairs >> ((7 * a + 13 * b) % 64) & 1 == 1
        });
        let mut exchanges = batch_exchanges(&batch, engine);
        for _ in 0..2 {
            let run = (Mode::AllOutOfPlace, &nonblocking[..]);
            let report = run_batch(&batch, &network, &mut exchanges, run, &context);
            for (r, plan) in c.plans.iter().enumerate() {
                let direct = exchanges[r].direct_streams();
                let read = fields as u64 * direct.bytes_read;
                let expected = fields as u64 * plan.stats().bytes_received
                    + direct.control_bytes_received(fields);
                assert_eq!(report.read[r], read, "rank {r} read: {}", context());
                let moved = report.received[r] + report.read[r];
                assert_eq!(moved, expected, "rank {r} received: {}", context());
            }
        }
        let reads = exchanges
            .iter()
            .map(|e| e.direct_streams().reads)
            .sum::<usize>();
        seen[4] += u64::from(fields > 1 && reads > 0);
        seen[0] += u64::from(fields > 1);
        seen[1] += u64::from(fields > 1 && strided);
        if roomy {
            let one = BatchCase { fields: 1, ..batch };
            let run = (Mode::OutOfPlace, &nonblocking[..]);
            let single = run_batch(&one, &network, &mut exchanges, run, &context);
            let batched = run_batch(&batch, &network, &mut exchanges, run, &context);
            let apart = engine.limits.field_message_bytes < 1 << 20 && fields <= engine.per_round;
            match apart {
                false => assert_eq!(
                    batched.messages,
                    single.messages,
                    "messages per pair: {}",
                    context()
                ),
                true => {
                    let pairs = batched.messages.iter().flatten();
                    for (&b, &s) in pairs.zip(single.messages.iter().flatten()) {
                        let bounded = s <= b && b <= fields * s;
                        assert!(bounded, "messages per pair {b} for {s}: {}", context());
                    }
                }
            }
            seen[3] += u64::from(apart && batched.messages != single.messages);
            let messages: usize = single.messages.iter().flatten().sum();
            seen[2] += u64::from(fields > 1 && messages > 0);
        }
    }
    eprintln!("{BATCH_CASES} cases: batches, strided batches, counted, apart, read: {seen:?}");
    let often = [seen[0], seen[1], seen[2], seen[4]]
        .iter()
        .all(|&n| n > BATCH_CASES / 8);
    assert!(often && seen[3] > BATCH_CASES / 50, "{seen:?}");
}

/// `limits` drawn for 8-byte elements, for elements of `elem_size` bytes:
/// every byte count scaled alike, the roomy ones (1 MiB and up) kept.
fn scaled_limits(limits: MessageLimits, elem_size: usize) -> MessageLimits {
    let scale = |bytes: usize| match bytes >= 1 << 20 {
        true => bytes,
        false => bytes / 8 * elem_size,
    };
    MessageLimits {
        max_bytes: scale(limits.max_bytes),
        direct_bytes: scale(limits.direct_bytes),
        strided_short_bytes: scale(limits.strided_short_bytes),
        packed_bytes: scale(limits.packed_bytes),
        field_message_bytes: scale(limits.field_message_bytes),
        ..limits
    }
}

/// A large input shape: 2 or 3 axes, up to some 12000 elements, so that a
/// pair of ranks may move more than `FRAMED_BYTES` over the fused plans.
fn large_shape(rng: &mut Rng) -> Vec<u64> {
    let mut shape = vec![8 + rng.below(25), 8 + rng.below(25)];
    if rng.chance(2) {
        shape.push(2 + rng.below(11));
    }
    shape
}

/// The redistribution of `part`'s plans, of elements of `elem_size` bytes.
fn same_layouts(part: &FusedPart, elem_size: usize) -> RandomPlans {
    let plans = (part.plans.iter())
        .map(|plan| RankPlan::for_layouts(plan.layouts.clone(), elem_size, plan.rank))
        .collect::<distreshape::Result<_>>()
        .expect("plan");
    RandomPlans {
        plans,
        inputs: part.inputs.clone(),
        outputs: part.outputs.clone(),
        context: format!("{elem_size} B, the plan before's layouts"),
    }
}

/// Random fused executions of 2-4 plans over 1-8 ranks through every rank's
/// real exchange engines (see [`common::fused`]): each plan its own random
/// grid redistribution (now and then the one before's, or a large array),
/// of 4, 8 or 16-byte elements, 1-3 fields (a plan fused that many times),
/// dense or strided, small or roomy message limits, lists kept or cut, the
/// pairs of ranks reading each other directly where a plan's inputs are
/// dense. Fused, each plan alone, then fused again: every element of every
/// field arrives right, no sentinel is touched, every input is unchanged,
/// every rank receives exactly every plan's bytes times its fields; between
/// every two ranks the fused execution posts the messages of the plans
/// alone, but one frame on exactly the pairs where two plans or more move
/// fewer than `FRAMED_BYTES` in all, no plan reading directly; each rank's
/// frames' buffer holds exactly its framed pairs' bytes.
#[test]
fn real_exchange_delivers_random_fusions() {
    let mut rng = Rng(0xf05e);
    let mut seen = FusedSeen::default();
    for case in 0..FUSED_CASES {
        let p = 1 + rng.below(8);
        let direct_pairs = [0, u64::MAX, rng.below(u64::MAX)][rng.below(3) as usize];
        let (mut parts, mut contexts) = (Vec::<FusedPart>::new(), Vec::new());
        for _ in 0..2 + rng.below(3) {
            let elem_size = [4, 8, 16][rng.below(3) as usize];
            let c = match parts.last() {
                Some(before) if rng.chance(4) => same_layouts(before, elem_size),
                _ => {
                    let shape = match rng.chance(8) {
                        true => large_shape(&mut rng),
                        false => input_shape(&mut rng),
                    };
                    random_plans_of(&mut rng, case, &shape, p, elem_size)
                }
            };
            let fields = 1 + rng.below(3) as usize;
            let (strided, dense_inputs) = (rng.chance(3), rng.chance(2));
            let mut below = |n| rng.below(n);
            let storages: Vec<Storages> = (c.plans.iter())
                .map(|plan| match strided {
                    true => random_storages(&mut below, plan, dense_inputs),
                    false => Storages {
                        input: Storage::dense(&plan.local_input_shape()),
                        output: Storage::dense(&plan.local_output_shape()),
                    },
                })
                .collect();
            let large = c.inputs.iter().map(Vec::len).sum::<usize>() > 2000;
            let limits = match large || rng.chance(2) {
                true => roomy_limits(&mut rng),
                false => small_limits(&mut rng),
            };
            let engine = BatchEngine {
                limits: scaled_limits(limits, elem_size),
                window: 1 + rng.below(3) as usize,
                per_round: [1, 2, 3, 5][rng.below(4) as usize],
                keep_budget: [0, 3, 1 << 20][rng.below(3) as usize],
                direct_pairs,
            };
            contexts.push(format!(
                "{fields} fields, {engine:?} {storages:?} {}",
                c.context
            ));
            parts.push(FusedPart {
                plans: c.plans,
                storages,
                inputs: c.inputs,
                outputs: c.outputs,
                fields,
                engine,
            });
        }
        let context = || {
            let plans = contexts.join("; plan: ");
            format!("case {case}, {p} ranks, direct {direct_pairs:#x}, plan: {plans}")
        };
        seen.add(run_fused(&parts, direct_pairs, &context));
    }
    eprintln!("{FUSED_CASES} cases: {seen:?}");
    let often = [
        seen.framed_cases,
        seen.fewer_messages,
        seen.direct_cases,
        seen.strided_cases,
    ];
    assert!(often.iter().all(|&n| n > FUSED_CASES / 8), "{seen:?}");
    assert!(seen.framed_batches > FUSED_CASES / 16, "{seen:?}");
    assert!(
        seen.too_large_pairs > 0 && seen.maybe_direct_pairs > 0,
        "{seen:?}"
    );
}

/// Two plans fused on 2 ranks, each moving every element from rank 0 to rank
/// 1 in one run (a 1-d array, its one block moving over): 16 KiB of 16-byte
/// elements, and two fields of 4-byte elements, 16 KiB or 8 bytes less. The
/// pair travels framed below `FRAMED_BYTES` (32 KiB) only, and never when
/// the ranks read each other directly (the runs are long).
#[test]
fn fusions_frame_a_pair_only_below_framed_bytes() {
    let moved = |elems: u64, elem_size: usize, fields: usize| {
        let blocks = |first: u64| {
            [BlockLengths::Explicit(vec![
                first as i64,
                (elems - first) as i64,
            ])]
        };
        let layout =
            |first| GridLayout::new(&[elems], &[2], &[Some(0)], &blocks(first), 2).unwrap();
        let (input, output) = (layout(elems), layout(0));
        let (inputs, outputs) = (members(&input), members(&output));
        let layouts = Arc::new(Redistribution::new(input, output).unwrap());
        let plans: Vec<RankPlan> = (0..2)
            .map(|r| RankPlan::for_layouts(layouts.clone(), elem_size, r).expect("plan"))
            .collect();
        let storages = plans.iter().map(dense_storages).collect();
        let limits = MessageLimits {
            max_bytes: 1 << 20,
            direct_bytes: 64,
            strided_short_bytes: 16,
            packed_bytes: 1 << 20,
            max_runs: 1 << 10,
            strided_runs: StridedRuns::Slots,
            packs_all: false,
            field_message_bytes: 1 << 20,
        };
        let engine = BatchEngine {
            limits,
            window: 1,
            per_round: 2,
            keep_budget: 1 << 20,
            direct_pairs: 0,
        };
        FusedPart {
            plans,
            storages,
            inputs,
            outputs,
            fields,
            engine,
        }
    };
    for (small, direct_pairs, framed) in [(2047, 0, 1), (2048, 0, 0), (2047, u64::MAX, 0)] {
        let parts = [moved(1024, 16, 1), moved(small, 4, 2)];
        let context = || format!("{small} 4-byte elements, direct {direct_pairs:#x}");
        let seen = run_fused(&parts, direct_pairs, &context);
        assert_eq!(seen.framed_pairs, framed, "{seen:?}: {}", context());
        assert_eq!(
            seen.direct_cases,
            u64::from(direct_pairs != 0),
            "{}",
            context()
        );
    }
}

/// A panic inside every rank's message loop, once its first messages are posted,
/// caught as the C ABI's boundary catches it, leaves nothing behind: on random
/// grid redistributions, the next executions (the last of them every rank out of
/// place, so that the kept elements are copied) deliver every element exactly
/// once, the kept ones too.
#[test]
fn a_caught_panic_mid_exchange_leaves_the_next_executions_right() {
    let mut rng = Rng(0xba1c);
    for case in 0..ENGINE_CASES {
        let c = random_plans(&mut rng, case);
        let p = c.plans.len();
        let limits = small_limits(&mut rng);
        let mut engine = Engine {
            direct_pairs: 0,
            panic_first: true,
            ..random_engine(&mut rng, p)
        };
        let out_of_place = RankRun {
            in_place: false,
            nonblocking: rng.chance(2),
        };
        engine.executions.push(vec![out_of_place; p]);
        run_real_exchange(&c.plans, &c.inputs, &c.outputs, limits, &engine, &|| {
            c.context.clone()
        });
    }
}

/// A direct read that fails, on random grid redistributions where every pair of
/// ranks reads each other: both ends of every direct stream fail, every other
/// rank completes with the right output, and no rank waits forever.
#[test]
fn failed_direct_reads_fail_both_ends_and_leave_no_rank_waiting() {
    let mut rng = Rng(0xfa11);
    for case in 0..ENGINE_CASES / 4 {
        let c = random_plans(&mut rng, case);
        let limits = small_limits(&mut rng);
        run_failing_reads(&c.plans, &c.inputs, &c.outputs, limits, &|| {
            c.context.clone()
        });
    }
}

/// Every run between every two ranks of `layouts`.
fn total_runs(layouts: &Redistribution) -> usize {
    let p = layouts.input().nranks();
    (0..p)
        .flat_map(|from| (0..p).map(move |to| (from, to)))
        .map(|(from, to)| layouts.runs(from, to).count())
        .sum()
}

/// Every rank's plan of `layouts` (8-byte elements).
fn plans_of(layouts: Redistribution) -> Vec<RankPlan> {
    let p = layouts.input().nranks();
    let layouts = Arc::new(layouts);
    (0..p)
        .map(|r| RankPlan::for_layouts(layouts.clone(), 8, r).expect("plan"))
        .collect()
}

/// Random grid redistributions with a split input over 1-12 ranks, their in-place
/// schedules run on every rank's real in-place engine (see
/// [`common::inplace::run_in_place`]), first with a random mix of ranks in place and
/// out of place, then all in place, with budgets from one element to a few times
/// the local data and room for a piece per run down to a piece per 30 runs (more
/// than half of the cases fit), so that pieces are single elements, whole or cut
/// runs, or strided runs.
#[test]
fn in_place_engine_delivers_random_grid_redistributions() {
    let mut rng = Rng(0x1a9e);
    let (mut strided, mut pieces, mut scheduled, mut split) = (0, 0, 0, 0);
    for case in 0..IN_PLACE_CASES {
        let p = 1 + rng.below(12);
        let shape = input_shape(&mut rng);
        let new_shape = reshaped(&mut rng, &shape);
        let (input, output) = (layout(&mut rng, &shape, p), layout(&mut rng, &new_shape, p));
        if input.is_replicated() {
            continue;
        }
        split += 1;
        let (inputs, outputs) = (members(&input), members(&output));
        let most = inputs
            .iter()
            .chain(&outputs)
            .map(Vec::len)
            .max()
            .unwrap_or(0) as u64;
        let budget = 8 * (1 + rng.below(4 * most + 8)) as usize;
        let ctx = format!("case {case}, budget {budget}: {input:?} -> {output:?}");
        let layouts = Redistribution::new(input, output).unwrap();
        let room = (p * p) as usize + total_runs(&layouts) / (1 + rng.below(30) as usize);
        let mix = (0..p).map(|_| rng.chance(2)).collect();
        let executions = [mix, vec![true; p as usize]];
        let plans = plans_of(layouts);
        let Some(seen) = run_in_place(&plans, &inputs, &outputs, budget, room, &executions, &ctx)
        else {
            continue;
        };
        (strided, pieces, scheduled) =
            (strided + seen.strided, pieces + seen.pieces, scheduled + 1);
    }
    eprintln!("{split} split inputs, {scheduled} scheduled: {strided} strided pieces of {pieces}");
    assert!(scheduled > split / 2, "{scheduled} of {split} scheduled");
    assert!(
        strided > pieces / 20,
        "{strided} strided pieces of {pieces}"
    );
}

/// The grid_bench cases at a small size, in place with a budget of half the local
/// data and room for a piece per 4 runs: the pieces join strided runs, and the
/// real in-place engine delivers every element, the ranks all in place and half
/// of them out of place.
#[test]
fn in_place_pencil_and_brick_schedules_use_strided_pieces() {
    let shape = [32u64, 32, 16];
    let x = GridLayout::balanced(&shape, &[2, 2], &[None, Some(0), Some(1)], 4).unwrap();
    let y = GridLayout::balanced(&shape, &[2, 2], &[Some(0), None, Some(1)], 4).unwrap();
    let bricks = GridLayout::balanced(&shape, &[2, 2, 1], &[Some(0), Some(1), Some(2)], 4).unwrap();
    let rows = GridLayout::balanced(&[1024, 16], &[4], &[Some(0), None], 4).unwrap();
    let executions = [vec![true; 4], vec![true, false, false, true]];
    for (a, b) in [(&x, &y), (&bricks, &x), (&x, &rows)] {
        let (inputs, outputs) = (members(a), members(b));
        let local_bytes = inputs[0].len() * 8;
        let ctx = format!("{a:?} -> {b:?}");
        let layouts = Redistribution::new(a.clone(), b.clone()).unwrap();
        let runs = total_runs(&layouts);
        let plans = plans_of(layouts);
        let budget = local_bytes / 2;
        let seen = run_in_place(
            &plans,
            &inputs,
            &outputs,
            budget,
            runs / 4,
            &executions,
            &ctx,
        )
        .expect("pieces of 4 runs fit");
        assert!(
            seen.strided > 0 && seen.pieces <= runs / 4,
            "{ctx}: {seen:?}, {runs} runs"
        );
    }
}

/// An x -> y pencil transpose shares global runs of one block of the fastest axis
/// (16 elements here), but they lie back to back in both pencils over a whole
/// plane of the block (16 x 16 elements, 2 KiB), and the planes lie back to back in
/// the sender's pencil: with 2 KiB direct messages, all that a rank sends its peer
/// is one message, contiguous on the sending side and eight planes at one stride on
/// the receiving side (received through a strided datatype, or through the slot),
/// or, with a message per run, eight messages contiguous at both ends.
/// Shorter than the direct messages, the planes are packed even where strided
/// datatypes pay: short runs join only at a stride in the sender's buffer.
#[test]
fn pencil_transpose_travels_as_one_strided_message_per_peer() {
    let shape = [16u64, 32, 32];
    let x = GridLayout::balanced(&shape, &[2, 2], &[None, Some(0), Some(1)], 4).unwrap();
    let y = GridLayout::balanced(&shape, &[2, 2], &[Some(0), None, Some(1)], 4).unwrap();
    let layouts = Arc::new(Redistribution::new(x, y).unwrap());
    let plans: Vec<RankPlan> = (0..4)
        .map(|r| RankPlan::for_layouts(layouts.clone(), 8, r).expect("plan"))
        .collect();
    let plane = 16 * 16 * 8;
    let limits = |strided_runs| MessageLimits {
        max_bytes: 1 << 20,
        direct_bytes: 2048,
        strided_short_bytes: 2048,
        packed_bytes: 1 << 20,
        max_runs: 1 << 10,
        strided_runs,
        packs_all: false,
        field_message_bytes: usize::MAX,
    };
    // Runs shorter than `direct_bytes` at a stride in the receiver's pencil only:
    // packed, as short strided runs join only at a stride in the sender's buffer.
    let short = MessageLimits {
        direct_bytes: 4 * plane,
        strided_short_bytes: plane,
        ..limits(StridedRuns::StridedDatatypes)
    };
    for (limits, kind) in [
        (limits(StridedRuns::StridedReceives), MessageKind::Direct),
        (limits(StridedRuns::Slots), MessageKind::Packed),
        (short, MessageKind::Packed),
    ] {
        for (r, plan) in plans.iter().enumerate() {
            assert_eq!(plan.sends.len(), 1, "rank {r} sends within its grid row");
            let peer = plan.sends[0].peer;
            let cut = |runs, placement| {
                let mut cutter = MessageCutter::new(runs, placement, 8, limits);
                let mut segments = Vec::new();
                assert_eq!(cutter.next_message(&mut segments), Some(kind));
                let last = cutter.next_message(&mut Vec::new());
                assert_eq!(last, None, "rank {r} -> {peer}");
                segments
            };
            let sent = cut(plan.send_runs(peer), Placement::Source);
            assert_eq!(sent.len(), 1);
            assert_eq!(sent[0].len, 8 * plane, "rank {r} -> {peer}");
            let received = cut(plans[peer].recv_runs(r), Placement::Target);
            assert_eq!(received.len(), 8, "rank {r} -> {peer}: a segment per plane");
            for (i, segment) in received.iter().enumerate() {
                assert_eq!(segment.len, plane);
                assert_eq!(segment.offset, received[0].offset + i * 2 * plane);
            }
        }
    }
    let per_run = limits(StridedRuns::RunMessages);
    for (r, plan) in plans.iter().enumerate() {
        let peer = plan.sends[0].peer;
        let cut = |runs, placement| {
            let mut cutter = MessageCutter::new(runs, placement, 8, per_run);
            let (mut all, mut segments) = (Vec::new(), Vec::new());
            while let Some(kind) = cutter.next_message(&mut segments) {
                assert_eq!(kind, MessageKind::Direct, "rank {r} -> {peer}");
                assert_eq!(segments.len(), 1, "contiguous: rank {r} -> {peer}");
                all.push(segments[0]);
            }
            all
        };
        let sent = cut(plan.send_runs(peer), Placement::Source);
        let received = cut(plans[peer].recv_runs(r), Placement::Target);
        assert_eq!((sent.len(), received.len()), (8, 8), "a message per plane");
        for (i, (s, t)) in sent.iter().zip(&received).enumerate() {
            assert_eq!((s.len, t.len), (plane, plane));
            assert_eq!(s.offset, sent[0].offset + i * plane);
            assert_eq!(t.offset, received[0].offset + i * 2 * plane);
        }
    }
}

/// Bricks to x-pencils share runs of half the fastest axis (16 elements, 128 B)
/// at a stride of the whole axis in the brick, back to back in the pencil: with
/// strided datatypes at both ends each rank sends each peer one message, 128 runs
/// at one stride in its brick, received as one contiguous stretch of the pencil;
/// through the slots, the same message packed by the sender (and a slot of half
/// its bytes cuts it in two); with strided receives only, or a message per run,
/// one message per run.
/// Shorter than `direct_bytes` they travel the same with strided datatypes (as
/// short strided runs), and are packed into one message otherwise.
#[test]
fn bricks_to_pencils_travel_as_one_strided_send_per_peer() {
    let shape = [16u64, 32, 32];
    let bricks = GridLayout::balanced(&shape, &[2, 2, 1], &[Some(0), Some(1), Some(2)], 4).unwrap();
    let x = GridLayout::balanced(&shape, &[2, 2], &[None, Some(0), Some(1)], 4).unwrap();
    let layouts = Arc::new(Redistribution::new(bricks, x).unwrap());
    let plans: Vec<RankPlan> = (0..4)
        .map(|r| RankPlan::for_layouts(layouts.clone(), 8, r).expect("plan"))
        .collect();
    let (run, shared) = (16 * 8, 8 * 16 * 16 * 8);
    let limits = |strided_runs, packed_bytes| MessageLimits {
        max_bytes: 1 << 20,
        direct_bytes: 128,
        strided_short_bytes: 128,
        packed_bytes,
        max_runs: 1 << 10,
        strided_runs,
        packs_all: false,
        field_message_bytes: usize::MAX,
    };
    // The runs shorter than `direct_bytes`, but joined as short strided runs.
    let short = |strided_runs| MessageLimits {
        direct_bytes: 4 * run,
        ..limits(strided_runs, 1 << 20)
    };
    let messages = |runs, placement, limits: MessageLimits| {
        let mut cutter = MessageCutter::new(runs, placement, 8, limits);
        let mut all = Vec::new();
        let mut segments = Vec::new();
        while let Some(kind) = cutter.next_message(&mut segments) {
            all.push((kind, segments.clone()));
        }
        all
    };
    let at_one_stride = |segments: &[Segment]| {
        for (i, segment) in segments.iter().enumerate() {
            assert_eq!(segment.len, run);
            assert_eq!(segment.offset, segments[0].offset + i * 2 * run);
        }
    };
    for (r, plan) in plans.iter().enumerate() {
        assert!(!plan.sends.is_empty(), "rank {r} sends");
        for send in &plan.sends {
            let peer = send.peer;
            let (sends, receives) = (plan.send_runs(peer), plans[peer].recv_runs(r));
            for (limits, kind) in [
                (
                    limits(StridedRuns::StridedDatatypes, 1 << 20),
                    MessageKind::Direct,
                ),
                (short(StridedRuns::StridedDatatypes), MessageKind::Direct),
                (limits(StridedRuns::Slots, 1 << 20), MessageKind::Packed),
                (limits(StridedRuns::Slots, shared / 2), MessageKind::Packed),
            ] {
                let packed_bytes = limits.packed_bytes;
                let sent = messages(sends.clone(), Placement::Source, limits);
                let received = messages(receives.clone(), Placement::Target, limits);
                let count = shared / packed_bytes.min(shared);
                assert_eq!(
                    (sent.len(), received.len()),
                    (count, count),
                    "rank {r} -> {peer}"
                );
                for ((sent_kind, sent), (received_kind, received)) in sent.iter().zip(&received) {
                    assert_eq!((*sent_kind, *received_kind), (kind, kind));
                    assert_eq!(received.len(), 1, "contiguous in the pencil");
                    assert_eq!(received[0].len, shared / count);
                    assert_eq!(sent.len(), shared / count / run, "one segment per run");
                    at_one_stride(sent);
                }
            }
            for strided_runs in [StridedRuns::StridedReceives, StridedRuns::RunMessages] {
                let limits = limits(strided_runs, 1 << 20);
                let per_run = messages(sends.clone(), Placement::Source, limits);
                assert_eq!(per_run.len(), shared / run, "rank {r} -> {peer}");
                assert!(per_run.iter().all(|(kind, _)| *kind == MessageKind::Direct));
            }
            for strided_runs in [
                StridedRuns::StridedReceives,
                StridedRuns::RunMessages,
                StridedRuns::Slots,
            ] {
                let packed = messages(sends.clone(), Placement::Source, short(strided_runs));
                assert_eq!(packed.len(), 1, "short runs packed: rank {r} -> {peer}");
                assert_eq!(packed[0].0, MessageKind::Packed);
            }
        }
    }
}

#[test]
fn pencil_transposes_and_brick_layouts_deliver_every_element_once() {
    let shape = [6u64, 5, 4];
    let x = GridLayout::balanced(&shape, &[3, 2], &[None, Some(0), Some(1)], 6).unwrap();
    let y = GridLayout::balanced(&shape, &[3, 2], &[Some(0), None, Some(1)], 6).unwrap();
    let bricks = GridLayout::balanced(&shape, &[2, 3, 1], &[Some(0), Some(1), Some(2)], 6).unwrap();
    let flat = GridLayout::balanced(&[120], &[6], &[Some(0)], 6).unwrap();
    let mut seen = Seen::default();
    for (a, b) in [
        (&x, &y),
        (&y, &x),
        (&bricks, &x),
        (&x, &bricks),
        (&bricks, &flat),
        (&flat, &bricks),
    ] {
        let plan = Redistribution::new(a.clone(), b.clone()).unwrap();
        simulate(&plan, &mut seen, &format!("{a:?} -> {b:?}"));
    }
}

/// Plans without buffers: every rank's local copy and receives fill its output, and
/// the senders' lists are the receivers' lists.
fn check_lists(plan: &Redistribution) {
    let p = plan.input().nranks();
    let mut sent = BTreeMap::new();
    for s in 0..p {
        for t in plan.sends(s) {
            sent.insert((s, t.peer), t.elems);
        }
    }
    let mut received = BTreeMap::new();
    for r in 0..p {
        let list = plan.receives(r);
        let elems: u64 = list.iter().map(|t| t.elems).sum();
        assert_eq!(
            elems + plan.local_elements(r),
            plan.output().elements(r),
            "rank {r}"
        );
        received.extend(list.iter().map(|t| ((t.peer, r), t.elems)));
    }
    assert_eq!(sent, received);
}

#[test]
fn huge_and_many_axis_layouts_plan_without_overflow() {
    let cube = [1u64 << 20, 1 << 20, 1 << 20];
    let x = GridLayout::balanced(&cube, &[3, 5], &[None, Some(0), Some(1)], 15).unwrap();
    let y = GridLayout::balanced(&cube, &[5, 3], &[Some(0), None, Some(1)], 15).unwrap();
    let rows = GridLayout::balanced(&[1 << 40, 1 << 20], &[15], &[Some(0), None], 15).unwrap();
    for (a, b) in [(&x, &y), (&x, &rows), (&rows, &y)] {
        check_lists(&Redistribution::new(a.clone(), b.clone()).unwrap());
    }
    let twos = [2u64; 32];
    let mut axes = vec![None; 32];
    (axes[0], axes[3], axes[31]) = (Some(0), Some(2), Some(1));
    let spread = GridLayout::balanced(&twos, &[2, 2, 3], &axes, 12).unwrap();
    let halves = GridLayout::balanced(&[1 << 16, 1 << 16], &[4, 3], &[Some(1), None], 12).unwrap();
    check_lists(&Redistribution::new(spread.clone(), halves.clone()).unwrap());
    check_lists(&Redistribution::new(halves, spread).unwrap());
}
