//! Fused executions through every rank's real exchange engines over the
//! in-memory network: several plans of one set of ranks (each its own random
//! redistribution, element size, storages, limits and fields) run by one
//! [`FusedExchange`] per rank, each plan on its own tag slot and the frames on
//! slot 0. Every element's bytes name its plan, field and global index (never
//! the sentinel byte, which fills every other byte of every buffer); after each
//! execution every element of every field of every plan is checked, every
//! sentinel untouched and every input unchanged. The same exchanges then run
//! each plan alone (a batch of its fields), and the fused execution again:
//! the network must see the same bytes, and between every two ranks the same
//! messages, except that a pair whose traffic the fused exchange frames
//! posts fewer; which pairs are framed, and the frames' bytes, are checked
//! against the plans.

use distreshape::testing::{
    Endpoint, Exchange, FRAMED_BYTES, FieldBuffers, FusedExchange, FusedPlan, FusedRun, Mode,
    Network, NetworkReport, PLAN_SLOTS, Participant, RankPlan, Storage, Storages,
};

use crate::common::batch::{BatchCase, BatchEngine, batch_exchanges};
use crate::common::engine::execute_all;
use crate::common::strided::{SLACK, positions};

/// What no execution may write, nor leave in an output byte; no element's
/// byte is ever this.
pub const SENTINEL_BYTE: u8 = 0xEE;

/// One plan of a fused simulation: every rank's plan of one redistribution,
/// the ranks' storages and global indices, its fields and how its exchanges
/// are built.
pub struct FusedPart {
    /// Every rank's plan.
    pub plans: Vec<RankPlan>,
    /// Every rank's storages (dense or strided).
    pub storages: Vec<Storages>,
    /// Every rank's input box, global indices in C order.
    pub inputs: Vec<Vec<u64>>,
    /// Every rank's output box, global indices in C order.
    pub outputs: Vec<Vec<u64>>,
    /// Fields of the plan in each execution (the plan fused that many times).
    pub fields: usize,
    /// How its exchanges are built (the direct pairs are the case's).
    pub engine: BatchEngine,
}

impl FusedPart {
    fn batch(&self) -> BatchCase<'_> {
        BatchCase {
            plans: &self.plans,
            storages: &self.storages,
            inputs: &self.inputs,
            outputs: &self.outputs,
            fields: self.fields,
        }
    }

    fn elem_size(&self) -> usize {
        self.plans[0].elem_size
    }

    /// True when every rank's input is dense (the plan may read directly).
    fn inputs_dense(&self) -> bool {
        self.storages.iter().all(|s| s.input.is_dense())
    }

    /// Bytes rank `from` sends rank `to` in one execution, over the fields.
    fn pair_bytes(&self, from: usize, to: usize) -> usize {
        let sends = &self.plans[from].sends;
        let elems = sends.iter().find(|t| t.peer == to).map_or(0, |t| t.elems);
        elems as usize * self.elem_size() * self.fields
    }
}

/// What the fused simulations exercised.
#[derive(Clone, Copy, Debug, Default)]
pub struct FusedSeen {
    /// Cases in which some pair of ranks travelled framed.
    pub framed_cases: u64,
    /// Cases whose fused execution posted fewer messages than the plans alone.
    pub fewer_messages: u64,
    /// Pairs of ranks (one direction) that travelled framed.
    pub framed_pairs: u64,
    /// Pairs where two plans or more move bytes, too many to frame.
    pub too_large_pairs: u64,
    /// Pairs where two plans or more move few bytes, but some plan may read
    /// directly between them.
    pub maybe_direct_pairs: u64,
    /// Cases where some plan read directly.
    pub direct_cases: u64,
    /// Cases where some plan's storage is strided.
    pub strided_cases: u64,
    /// Cases where framed pairs carry a batch of several fields of one plan.
    pub framed_batches: u64,
}

/// One rank's engines: every plan's exchange, in the order of the case, and
/// the fused exchange over them.
pub struct RankEngines<'n> {
    exchanges: Vec<Exchange<Endpoint<'n>>>,
    fused: FusedExchange<Endpoint<'n>>,
}

/// Byte `b` of the element with global C-order index `global` in field
/// `field` of plan `plan`: a hash of the four, never [`SENTINEL_BYTE`].
fn element_byte(plan: usize, field: usize, global: u64, b: usize) -> u8 {
    let mut x = (plan as u64) << 60 ^ (field as u64) << 56 ^ global << 4 ^ b as u64;
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    match (x ^ (x >> 31)) as u8 {
        SENTINEL_BYTE => 0x11,
        byte => byte,
    }
}

/// The bytes of the elements `globals` (a box in C order) of field `field`
/// of plan `plan`, of `size` bytes each.
fn element_bytes(plan: usize, field: usize, globals: &[u64], size: usize) -> Vec<u8> {
    (globals.iter())
        .flat_map(|&g| (0..size).map(move |b| element_byte(plan, field, g, b)))
        .collect()
}

/// A buffer holding `values` (a box's elements of `size` bytes in C order)
/// where `storage` puts them, after [`SLACK`] elements, [`SENTINEL_BYTE`]
/// everywhere else.
pub fn stored_bytes(storage: &Storage, size: usize, values: &[u8]) -> Vec<u8> {
    let mut buffer = vec![SENTINEL_BYTE; (SLACK + storage.span() as usize + SLACK) * size];
    let elements = values.chunks_exact(size);
    for (at, element) in positions(storage).into_iter().zip(elements) {
        buffer[(SLACK + at) * size..][..size].copy_from_slice(element);
    }
    buffer
}

/// The box elements of `buffer` (of `size` bytes each) in C order, or the
/// first byte outside them that is no longer the sentinel.
pub fn read_back_bytes(storage: &Storage, size: usize, buffer: &[u8]) -> Result<Vec<u8>, String> {
    let positions = positions(storage);
    let mut is_element = vec![false; buffer.len()];
    for &at in &positions {
        is_element[(SLACK + at) * size..][..size].fill(true);
    }
    if let Some(at) = (0..buffer.len()).find(|&i| !is_element[i] && buffer[i] != SENTINEL_BYTE) {
        return Err(format!(
            "a gap was written: byte {at} holds {:#x}",
            buffer[at]
        ));
    }
    let element = |at: usize| &buffer[(SLACK + at) * size..][..size];
    Ok(positions
        .iter()
        .flat_map(|&at| element(at))
        .copied()
        .collect())
}

/// Runs the fused case `parts` (the plans in the order every rank fuses them)
/// on `p` ranks whose pairs named by `direct_pairs` (bit `(7 a + 13 b) % 64`
/// for ranks `a < b`) read each other directly where a plan's inputs are
/// dense: fused, then each plan alone, then fused again, each checked element
/// by element, gap by gap, input by input; checks the bytes every rank
/// receives, the messages between every two ranks and the frames against the
/// plans. Returns what the case exercised.
pub fn run_fused(
    parts: &[FusedPart],
    direct_pairs: u64,
    context: &dyn Fn() -> String,
) -> FusedSeen {
    let p = parts[0].plans.len();
    assert!(parts.len() < PLAN_SLOTS as usize, "a tag slot per plan");
    let direct = |a: usize, b: usize| direct_pairs >> ((7 * a + 13 * b) % 64) & 1 == 1;
    let network = Network::with_direct_reads(p, direct);
    let mut ranks = rank_engines(parts, direct_pairs);
    let fused = execute(parts, &network, &mut ranks, None, context);
    check_received(parts, &ranks, &fused, context);
    let mut alone = NetworkReport {
        messages: vec![vec![0; p]; p],
        ..NetworkReport::default()
    };
    for j in 0..parts.len() {
        let context = || format!("plan {j} alone: {}", context());
        let report = execute(parts, &network, &mut ranks, Some(j), &context);
        for (r, engines) in ranks.iter().enumerate() {
            let (plan, fields) = (&parts[j].plans[r], parts[j].fields);
            let direct = engines.exchanges[j].direct_streams();
            let expected =
                fields as u64 * plan.stats().bytes_received + direct.control_bytes_received(fields);
            let moved = report.received[r] + report.read[r];
            assert_eq!(moved, expected, "rank {r} received: {}", context());
        }
        let pairs = alone.messages.iter_mut().flatten();
        pairs
            .zip(report.messages.iter().flatten())
            .for_each(|(a, b)| *a += b);
    }
    let again = execute(parts, &network, &mut ranks, None, context);
    check_received(parts, &ranks, &again, context);
    assert_eq!(
        again.messages,
        fused.messages,
        "messages repeated: {}",
        context()
    );
    let mut seen = check_frames(parts, &ranks, &fused, &alone, direct_pairs, context);
    let reads = |e: &RankEngines| e.exchanges.iter().any(|x| x.direct_streams().count > 0);
    seen.direct_cases = u64::from(ranks.iter().any(reads));
    let strided = |part: &FusedPart| !part.storages.iter().all(Storages::are_dense);
    seen.strided_cases = u64::from(parts.iter().any(strided));
    seen
}

/// Runs the fused execution of every plan (`alone`: `None`), or the batch of
/// plan `alone` by itself, on every rank (see [`execute_rank`]); returns what
/// the network saw.
fn execute<'n>(
    parts: &[FusedPart],
    network: &'n Network,
    ranks: &mut [RankEngines<'n>],
    alone: Option<usize>,
    context: &dyn Fn() -> String,
) -> NetworkReport {
    let none = vec![Vec::new(); ranks.len()];
    let run = |r: usize, engines: &mut RankEngines<'n>, endpoint: &Endpoint<'n>| {
        execute_rank(parts, network, r, engines, endpoint, alone)
    };
    execute_all(network, ranks, &none, run, context)
}

/// Every rank's engines: each plan's exchanges built as a batch's (all packed
/// where a storage of the plan is strided, reading directly only where its
/// inputs are dense), and the fused exchange over them.
fn rank_engines<'n>(parts: &[FusedPart], direct_pairs: u64) -> Vec<RankEngines<'n>> {
    let mut per_plan: Vec<_> = (parts.iter())
        .map(|part| {
            let engine = BatchEngine {
                direct_pairs,
                ..part.engine
            };
            batch_exchanges(&part.batch(), engine).into_iter()
        })
        .collect();
    (0..parts[0].plans.len())
        .map(|r| {
            let exchanges: Vec<Exchange<Endpoint<'n>>> = (per_plan.iter_mut())
                .map(|plan| plan.next().expect("an exchange per rank"))
                .collect();
            let plans: Vec<FusedPlan<'_, Endpoint<'n>>> = (exchanges.iter().zip(parts))
                .map(|(exchange, part)| FusedPlan {
                    exchange,
                    plan: &part.plans[r],
                    fields: part.fields,
                })
                .collect();
            let fused = FusedExchange::new(&plans, r).expect("fused exchange");
            RankEngines { exchanges, fused }
        })
        .collect()
}

/// Rank `r`'s fused execution of every plan (`alone`: `None`), or its batch
/// of plan `alone` by itself, on buffers filled afresh; checks every output
/// element of every field, every sentinel and every input. Returns nothing
/// (the checks are made here, byte-generic).
fn execute_rank<'n>(
    parts: &[FusedPart],
    network: &'n Network,
    r: usize,
    engines: &mut RankEngines<'n>,
    endpoint: &Endpoint<'n>,
    alone: Option<usize>,
) -> Result<Vec<u8>, String> {
    let input_of = |j: usize, f: usize| {
        let part = &parts[j];
        let size = part.elem_size();
        let values = element_bytes(j, f, &part.inputs[r], size);
        stored_bytes(&part.storages[r].input, size, &values)
    };
    let fields = |j: usize| 0..parts[j].fields;
    let inputs: Vec<Vec<Vec<u8>>> = (0..parts.len())
        .map(|j| fields(j).map(|f| input_of(j, f)).collect())
        .collect();
    let mut outputs: Vec<Vec<Vec<u8>>> = (parts.iter())
        .map(|part| {
            let empty = stored_bytes(&part.storages[r].output, part.elem_size(), &[]);
            vec![empty; part.fields]
        })
        .collect();
    let at = |j: usize| SLACK * parts[j].elem_size();
    let input_ptrs: Vec<Vec<*const u8>> = (inputs.iter().enumerate())
        .map(|(j, fields)| fields.iter().map(|b| b[at(j)..].as_ptr()).collect())
        .collect();
    let output_ptrs: Vec<Vec<*mut u8>> = (outputs.iter_mut().enumerate())
        .map(|(j, fields)| fields.iter_mut().map(|b| b[at(j)..].as_mut_ptr()).collect())
        .collect();
    let endpoints: Vec<Endpoint<'n>> = (1..=parts.len() as u64)
        .map(|slot| network.plan_endpoint(r, slot))
        .collect();
    let on = |j: usize| Participant {
        plan: &parts[j].plans[r],
        transport: &endpoints[j],
    };
    let buffers = |j: usize| FieldBuffers {
        inputs: &input_ptrs[j],
        outputs: &output_ptrs[j],
    };
    // SAFETY: each buffer holds its storage's span after the slack; they are
    // distinct and outlive the execution, which completes (or is abandoned)
    // before this returns; every rank runs the same plans in the same order.
    let result = unsafe {
        match alone {
            None => {
                let mut runs: Vec<FusedRun<'_, Endpoint<'n>>> = (engines.exchanges.iter_mut())
                    .enumerate()
                    .map(|(j, exchange)| FusedRun {
                        exchange,
                        on: on(j),
                        buffers: buffers(j),
                    })
                    .collect();
                engines
                    .fused
                    .run(endpoint, Mode::AllOutOfPlace, &mut runs[..])
            }
            Some(j) => engines.exchanges[j].run_batch(on(j), Mode::AllOutOfPlace, buffers(j)),
        }
    };
    result.map_err(|e| format!("rank {r}: {e}"))?;
    let ran = |j: &usize| alone.is_none_or(|a| a == *j);
    for j in (0..parts.len()).filter(ran) {
        let (part, size) = (&parts[j], parts[j].elem_size());
        for f in fields(j) {
            let field = format!("rank {r}, plan {j}, field {f}");
            if inputs[j][f] != input_of(j, f) {
                return Err(format!("{field}: the input changed"));
            }
            let output = &outputs[j][f];
            let values = read_back_bytes(&part.storages[r].output, size, output)
                .map_err(|e| format!("{field}: {e}"))?;
            let expected = element_bytes(j, f, &part.outputs[r], size);
            if let Some(i) = (0..expected.len()).find(|&i| values[i] != expected[i]) {
                let (element, global) = (i / size, part.outputs[r][i / size]);
                return Err(format!(
                    "{field}: output element {element} (global {global}) byte {} holds {:#x}, not {:#x}",
                    i % size,
                    values[i],
                    expected[i]
                ));
            }
        }
    }
    Ok(Vec::new())
}

/// Checks that every rank received, in messages and frames or by direct
/// reads, exactly every plan's bytes times its fields, plus the direct
/// reads' control messages, and read exactly its direct streams' bytes.
fn check_received(
    parts: &[FusedPart],
    ranks: &[RankEngines<'_>],
    report: &NetworkReport,
    context: &dyn Fn() -> String,
) {
    for (r, engines) in ranks.iter().enumerate() {
        let (mut expected, mut read) = (0, 0);
        for (part, exchange) in parts.iter().zip(&engines.exchanges) {
            let (fields, direct) = (part.fields, exchange.direct_streams());
            expected += fields as u64 * part.plans[r].stats().bytes_received
                + direct.control_bytes_received(fields);
            read += fields as u64 * direct.bytes_read;
        }
        assert_eq!(report.read[r], read, "rank {r} read: {}", context());
        let moved = report.received[r] + report.read[r];
        assert_eq!(moved, expected, "rank {r} received: {}", context());
    }
}

/// Checks the framing of the fused execution (`fused`) against the plans run
/// alone (`alone`, their messages summed): between every two ranks (one
/// direction) the fused execution posts the same messages, except on a
/// framed pair, which posts fewer; a pair is framed exactly when two plans or
/// more move bytes on it, fewer than [`FRAMED_BYTES`] in all (as far as can
/// be told where a plan may read directly between the two); every rank's
/// frames are its framed pairs and its frames' buffer their bytes, within
/// the bytes it sends and receives.
fn check_frames(
    parts: &[FusedPart],
    ranks: &[RankEngines<'_>],
    fused: &NetworkReport,
    alone: &NetworkReport,
    direct_pairs: u64,
    context: &dyn Fn() -> String,
) -> FusedSeen {
    let p = ranks.len();
    let mut seen = FusedSeen::default();
    let mut frames = vec![0usize; p];
    let mut framed_bytes = vec![0usize; p];
    for (a, b) in (0..p).flat_map(|a| (0..p).map(move |b| (a, b))) {
        let (f, s) = (fused.messages[a][b], alone.messages[a][b]);
        assert!(
            f <= s,
            "{a} -> {b}: {f} messages fused, {s} alone: {}",
            context()
        );
        let framed = f < s;
        let bytes: Vec<usize> = parts.iter().map(|part| part.pair_bytes(a, b)).collect();
        let total: usize = bytes.iter().sum();
        let moving = bytes.iter().filter(|&&n| n > 0).count();
        let small = moving >= 2 && total < FRAMED_BYTES;
        let (lo, hi) = (a.min(b), a.max(b));
        let pair_direct = direct_pairs >> ((7 * lo + 13 * hi) % 64) & 1 == 1;
        let maybe_direct = (parts.iter().zip(&bytes))
            .any(|(part, &n)| n > 0 && pair_direct && part.inputs_dense());
        let context = || {
            let many = format!("{a} -> {b}: {f} messages fused, {s} alone, plans' bytes {bytes:?}");
            format!("{many}: {}", context())
        };
        match maybe_direct {
            false => assert_eq!(framed, small, "framed: {}", context()),
            true => assert!(!framed || small, "framed: {}", context()),
        }
        if framed {
            assert!(f >= 1, "the frame: {}", context());
            frames[a] += 1;
            frames[b] += 1;
            framed_bytes[a] += total;
            framed_bytes[b] += total;
            seen.framed_pairs += 1;
            let batched = parts
                .iter()
                .zip(&bytes)
                .any(|(part, &n)| n > 0 && part.fields > 1);
            seen.framed_batches |= u64::from(batched);
        }
        seen.too_large_pairs += u64::from(moving >= 2 && total >= FRAMED_BYTES);
        seen.maybe_direct_pairs += u64::from(small && maybe_direct);
    }
    for (r, engines) in ranks.iter().enumerate() {
        let fused = &engines.fused;
        let context = || format!("rank {r}, {fused:?}: {}", context());
        assert_eq!(fused.frames(), frames[r], "frames: {}", context());
        assert_eq!(
            fused.framed_bytes(),
            framed_bytes[r],
            "frame bytes: {}",
            context()
        );
        let moved: u64 = (parts.iter())
            .map(|part| {
                let stats = part.plans[r].stats();
                part.fields as u64 * (stats.bytes_sent + stats.bytes_received)
            })
            .sum();
        assert!(
            fused.framed_bytes() as u64 <= moved,
            "bounded: {}",
            context()
        );
        let most = fused.frames() * (FRAMED_BYTES - 1);
        assert!(fused.framed_bytes() <= most, "bounded: {}", context());
    }
    let (framed, sent, apart) = (
        seen.framed_pairs as usize,
        fused.messages.iter().flatten().sum::<usize>(),
        alone.messages.iter().flatten().sum::<usize>(),
    );
    assert_eq!(
        framed > 0,
        sent < apart,
        "{sent} messages fused, {apart} alone: {}",
        context()
    );
    seen.framed_cases = u64::from(framed > 0);
    seen.fewer_messages = u64::from(sent < apart);
    seen
}

impl FusedSeen {
    /// Adds the counts of another case.
    pub fn add(&mut self, other: FusedSeen) {
        self.framed_cases += other.framed_cases;
        self.fewer_messages += other.fewer_messages;
        self.framed_pairs += other.framed_pairs;
        self.too_large_pairs += other.too_large_pairs;
        self.maybe_direct_pairs += other.maybe_direct_pairs;
        self.direct_cases += other.direct_cases;
        self.strided_cases += other.strided_cases;
        self.framed_batches += other.framed_batches;
    }
}
