//! The real exchange engine of every rank run in one process: one thread per rank
//! over one in-memory network, so that the pure simulations (slabs and grid
//! layouts) prove the engine itself, not a model of it, deadlock-free and exact.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

use distreshape::testing::{
    DirectStreams, Endpoint, Exchange, INJECTED_PANIC, MessageLimits, Mode, Network, NetworkReport,
    Participant, Progress, RankPlan, ReadPeers, Route, Storages, proposed_window_width,
};
use proptest::prelude::*;

/// C order without gaps for both of `plan`'s boxes.
pub fn dense_storages(plan: &RankPlan) -> Storages {
    Storages::dense(&plan.local_input_shape(), &plan.local_output_shape())
}

/// The native bytes of `values`.
pub fn to_bytes(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// How one rank runs one execution of the real exchange engine in the simulation.
#[derive(Clone, Copy, Debug)]
pub struct RankRun {
    /// In place (each rank's own choice): [`Mode::InPlaceOrdered`] on the local
    /// path, [`Mode::InPlacePacked`] on the exchange path, as the plan chooses them.
    pub in_place: bool,
    /// Started with `begin` and carried on with non-blocking `advance`, else run
    /// to completion with `run`.
    pub nonblocking: bool,
}

/// How the ranks' exchanges are built and executed in one simulation.
#[derive(Clone, Debug)]
pub struct Engine {
    /// Peers per window (the ranks agree on the window width it gives).
    pub window: usize,
    /// Messages each stream posts per round.
    pub per_round: usize,
    /// Segments and copies kept at creation (0: every message cut on the fly).
    pub keep_budget: usize,
    /// Each execution's runs, one per rank.
    pub executions: Vec<Vec<RankRun>>,
    /// Which pairs of ranks read each other's memory directly: bit
    /// `(7 a + 13 b) % 64` for ranks `a < b` (0: none, all ones: every pair).
    pub direct_pairs: u64,
    /// Whether every rank that waits for messages panics at its first wait of
    /// the first execution, once its first messages are posted (the panic caught
    /// as the C ABI's boundary catches it): that execution is then not checked,
    /// the later ones are. Needs no pair of ranks reading each other directly,
    /// so that the panics strike the message loops.
    pub panic_first: bool,
}

impl Engine {
    /// True when ranks `a < b` read each other's memory directly.
    fn reads_directly(&self, a: usize, b: usize) -> bool {
        self.direct_pairs >> ((7 * a + 13 * b) % 64) & 1 == 1
    }
}

/// Random engines for `p` ranks: small windows and rounds, kept or cut lists, no,
/// every or some pairs reading each other directly, and two executions with each
/// rank's own choice of in place and non-blocking (every rank out of place in one
/// of three, so that the direct reads run).
pub fn engine(p: usize) -> impl Strategy<Value = Engine> {
    let run = (any::<bool>(), any::<bool>()).prop_map(|(in_place, nonblocking)| RankRun {
        in_place,
        nonblocking,
    });
    let all_out_of_place = prop::collection::vec(any::<bool>(), p).prop_map(|nonblocking| {
        let run = |nonblocking| RankRun {
            in_place: false,
            nonblocking,
        };
        nonblocking.into_iter().map(run).collect::<Vec<_>>()
    });
    let execution = prop_oneof![2 => prop::collection::vec(run, p), 1 => all_out_of_place];
    let direct_pairs = prop_oneof![Just(0u64), Just(u64::MAX), any::<u64>()];
    (
        1usize..4,
        1usize..4,
        prop::sample::select(vec![0usize, 3, 1 << 20]),
        prop::collection::vec(execution, 2),
        direct_pairs,
    )
        .prop_map(
            |(window, per_round, keep_budget, executions, direct_pairs)| Engine {
                window,
                per_round,
                keep_budget,
                executions,
                direct_pairs,
                panic_first: false,
            },
        )
}

/// Rank `r`'s execution of `runs` (one run per rank) on its `exchange`, from its
/// input in `in_bufs` (see [`execute_rank`]).
fn execute_rank_of<'n>(
    plans: &[RankPlan],
    runs: &[RankRun],
    in_bufs: &[Vec<u8>],
    r: usize,
    exchange: &mut Exchange<Endpoint<'n>>,
    endpoint: &Endpoint<'n>,
) -> Result<Vec<u8>, String> {
    let all_out_of_place = runs.iter().all(|run| !run.in_place);
    execute_rank(
        &plans[r],
        exchange,
        endpoint,
        runs[r],
        all_out_of_place,
        &in_bufs[r],
    )
}

/// One rank's execution of its real [`Exchange`] over the in-memory network,
/// started on `buffer` (its input, sized for in place too); returns the output.
fn execute_rank<'n>(
    plan: &RankPlan,
    exchange: &mut Exchange<Endpoint<'n>>,
    endpoint: &Endpoint<'n>,
    run: RankRun,
    all_out_of_place: bool,
    input: &[u8],
) -> Result<Vec<u8>, String> {
    let out_bytes = plan.output_elems() as usize * 8;
    let mut buffer = input.to_vec();
    buffer.resize(input.len().max(out_bytes), 0xEE);
    let mut output = vec![0xEE; out_bytes];
    let on = Participant {
        plan,
        transport: endpoint,
    };
    let (mode, packed) = match (run.in_place, plan.path) {
        (false, _) if all_out_of_place => (Mode::AllOutOfPlace, Vec::new()),
        (false, _) => (Mode::OutOfPlace, Vec::new()),
        // A rank whose output equals its input does nothing in place (the plan's
        // rule): nothing moves to or from it.
        (true, _) if plan.is_identity() => return Ok(buffer[..out_bytes].to_vec()),
        (true, Route::Local) => (Mode::InPlaceOrdered, Vec::new()),
        (true, Route::Exchange) => (
            Mode::InPlacePacked,
            Vec::with_capacity(plan.stats().bytes_sent as usize),
        ),
    };
    let (src, dst) = match mode {
        Mode::OutOfPlace | Mode::AllOutOfPlace => (input.as_ptr(), output.as_mut_ptr()),
        _ => (buffer.as_ptr(), buffer.as_mut_ptr()),
    };
    // SAFETY: the buffers hold the plan's input and output sizes (in place, one
    // buffer of the larger), out of place they are distinct, and they outlive
    // the execution, which completes (or is abandoned) before this returns.
    let result = unsafe {
        match run.nonblocking {
            false => exchange.run(on, mode, packed, src, dst),
            true => {
                let started = exchange.begin(on, mode, packed, src, dst);
                complete_begun(exchange, on, started)
            }
        }
    };
    if let Err(e) = result {
        exchange.abandon(endpoint);
        return Err(format!("rank {}: {e}", plan.rank));
    }
    Ok(match mode {
        Mode::OutOfPlace | Mode::AllOutOfPlace => output,
        _ => buffer[..out_bytes].to_vec(),
    })
}

/// Carries an execution begun on `exchange` (`started`: whether it completed
/// at once) on to completion without blocking, waiting for the network to
/// progress between steps.
pub fn complete_begun<'n>(
    exchange: &mut Exchange<Endpoint<'n>>,
    on: Participant<'_, Endpoint<'n>>,
    started: distreshape::Result<bool>,
) -> distreshape::Result<()> {
    let mut done = started?;
    while !done {
        on.transport.wait_for_progress()?;
        done = exchange.advance(on, false)?;
    }
    Ok(())
}

/// The window width the ranks of `plans` agree on for `window` peers per window:
/// the narrowest any proposes.
fn agreed_width(plans: &[RankPlan], window: usize) -> usize {
    plans
        .iter()
        .map(|plan| proposed_window_width(plan, plans.len(), window).expect("distances"))
        .min()
        .expect("one rank at least")
}

/// Runs every rank's real exchange engine, one thread per rank over one in-memory
/// network, for each execution of `engine`, and checks that no execution
/// deadlocks and that every output element arrives exactly once: the outputs
/// (sentinel-filled first) hold exactly the global indices the oracle says, the
/// network delivered exactly the bytes each rank does not keep, in messages or
/// (every rank out of place) read directly, exactly the bytes of its direct
/// streams, plus 8 per control message (so, with the local copies writing exactly
/// the kept elements, no element arrives twice), and every send matched a receive
/// of its size. With [`Engine::panic_first`], the first execution panics instead
/// (see [`panic_mid_exchange`]) and the later ones are checked so.
pub fn run_real_exchange(
    plans: &[RankPlan],
    inputs: &[Vec<u64>],
    outputs: &[Vec<u64>],
    limits: MessageLimits,
    engine: &Engine,
    case: &dyn Fn() -> String,
) {
    let in_bufs: Vec<Vec<u8>> = inputs.iter().map(|v| to_bytes(v)).collect();
    let network = Network::with_direct_reads(plans.len(), |a, b| engine.reads_directly(a, b));
    let mut exchanges = exchanges(plans, limits, engine);
    let mut executions = engine.executions.iter();
    if engine.panic_first {
        let runs = executions.next().expect("an execution");
        let context = || format!("{runs:?} {engine:?} {}", case());
        assert_eq!(engine.direct_pairs, 0, "direct reads: {}", context());
        panic_mid_exchange(&network, plans, &mut exchanges, runs, &in_bufs, &context);
    }
    for runs in executions {
        let all_out_of_place = runs.iter().all(|run| !run.in_place);
        let context = || format!("{runs:?} {engine:?} {}", case());
        let rank_run = |r: usize, exchange: &mut _, endpoint: &_| {
            execute_rank_of(plans, runs, &in_bufs, r, exchange, endpoint)
        };
        let report = execute_all(&network, &mut exchanges, outputs, rank_run, &context);
        for r in 0..plans.len() {
            let output_bytes = outputs[r].len() as u64 * 8;
            let stats = plans[r].stats();
            let direct = match all_out_of_place {
                true => exchanges[r].direct_streams(),
                false => DirectStreams {
                    count: 0,
                    reads: 0,
                    bytes_read: 0,
                },
            };
            assert_eq!(report.read[r], direct.bytes_read, "rank {r} read");
            assert_eq!(
                report.received[r] + report.read[r],
                stats.bytes_received + direct.control_bytes_received(1),
                "rank {r} received: {}",
                context()
            );
            let kept = stats.bytes_copied_locally;
            assert_eq!(stats.bytes_received + kept, output_bytes, "rank {r}");
        }
    }
}

/// Every rank's exchange for `engine`, its ranks agreeing on the window width.
fn exchanges<'n>(
    plans: &[RankPlan],
    limits: MessageLimits,
    engine: &Engine,
) -> Vec<Exchange<Endpoint<'n>>> {
    let (p, width) = (plans.len(), agreed_width(plans, engine.window));
    plans
        .iter()
        .map(|plan| {
            let progress = Progress::for_path(plan.path, width);
            let (per_round, keep) = (engine.per_round, engine.keep_budget);
            let reads_from = |peer: usize| {
                let (a, b) = (plan.rank.min(peer), plan.rank.max(peer));
                a != b && engine.reads_directly(a, b)
            };
            let peers = ReadPeers {
                reads_from,
                inputs: None,
            };
            let storages = dense_storages(plan);
            Exchange::new(plan, p, limits, per_round, progress, keep, peers, storages)
                .expect("exchange")
        })
        .collect()
}

/// Runs one execution on every rank in which every rank that waits for messages
/// panics at its first wait, once its first messages are posted (caught as the C
/// ABI's boundary catches it), and checks that exactly the ranks with messages
/// panicked.
fn panic_mid_exchange<'n>(
    network: &'n Network,
    plans: &[RankPlan],
    exchanges: &mut [Exchange<Endpoint<'n>>],
    runs: &[RankRun],
    in_bufs: &[Vec<u8>],
    context: &dyn Fn() -> String,
) {
    quiet_injected_panics();
    network.panic_at_next_waits();
    network.start_execution();
    let results = on_every_rank(network, exchanges, |r, exchange, endpoint| {
        catch_unwind(AssertUnwindSafe(|| {
            execute_rank_of(plans, runs, in_bufs, r, exchange, endpoint)
        }))
        .unwrap_or_else(|panic| Err(panic_message(&*panic)))
    });
    for (r, result) in results.iter().enumerate() {
        let talks = plans[r].stats().bytes_sent + plans[r].stats().bytes_received > 0;
        let panicked = matches!(result, Err(e) if e.contains(INJECTED_PANIC));
        assert_eq!(panicked, talks, "rank {r} panicked: {}", context());
    }
}

/// Keeps the panics the network injects off the tests' output (the default hook
/// prints every panic, caught or not); any other panic is printed as before.
fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !panic_message(info.payload()).contains(INJECTED_PANIC) {
                default(info);
            }
        }));
    });
}

/// The message of a panic.
fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// Starts an execution on `network` and runs `rank_run` on every rank, one thread
/// each, with its engine of `engines` and its endpoint (which then leaves the
/// network); checks that no rank deadlocked, that every send matched a receive of
/// its size, and that every rank succeeded with exactly the global indices of
/// `outputs`; returns what the network saw.
pub fn execute_all<'n, E: Send>(
    network: &'n Network,
    engines: &mut [E],
    outputs: &[Vec<u64>],
    rank_run: impl Fn(usize, &mut E, &Endpoint<'n>) -> Result<Vec<u8>, String> + Sync,
    context: &dyn Fn() -> String,
) -> NetworkReport {
    network.start_execution();
    let results = on_every_rank(network, engines, rank_run);
    let report = network.report();
    assert!(!report.deadlocked, "the ranks deadlocked: {}", context());
    assert!(
        report.size_mismatches.is_empty(),
        "{report:?}: {}",
        context()
    );
    assert_eq!(report.unmatched, 0, "unmatched messages: {}", context());
    for (r, result) in results.into_iter().enumerate() {
        let output = result.unwrap_or_else(|e| panic!("{e}: {}", context()));
        let expected = to_bytes(&outputs[r]);
        assert_eq!(output, expected, "rank {r} output: {}", context());
    }
    report
}

/// Runs `rank_run` on every rank, one thread each, with its engine of `engines`
/// and its endpoint (which then leaves the network); returns what each returned.
fn on_every_rank<'n, E: Send, R: Send>(
    network: &'n Network,
    engines: &mut [E],
    rank_run: impl Fn(usize, &mut E, &Endpoint<'n>) -> R + Sync,
) -> Vec<R> {
    std::thread::scope(|scope| {
        let rank_run = &rank_run;
        let threads: Vec<_> = (engines.iter_mut().enumerate())
            .map(|(r, engine)| {
                scope.spawn(move || {
                    let endpoint = network.endpoint(r);
                    let output = rank_run(r, engine, &endpoint);
                    endpoint.finish();
                    output
                })
            })
            .collect();
        threads
            .into_iter()
            .map(|t| t.join().expect("rank thread"))
            .collect()
    })
}

/// Runs every rank's real exchange engine out of place, every pair of ranks
/// reading each other directly and every read failing: no rank waits forever, the
/// ranks with a direct stream (reading or read) fail, naming the read, and every
/// other rank's output is right.
pub fn run_failing_reads(
    plans: &[RankPlan],
    inputs: &[Vec<u64>],
    outputs: &[Vec<u64>],
    limits: MessageLimits,
    case: &dyn Fn() -> String,
) {
    let p = plans.len();
    let network = Network::with_direct_reads(p, |_, _| true).with_failing_reads();
    let width = agreed_width(plans, 2);
    let run = RankRun {
        in_place: false,
        nonblocking: false,
    };
    let mut exchanges: Vec<Exchange<Endpoint>> = plans
        .iter()
        .map(|plan| {
            let progress = Progress::for_path(plan.path, width);
            let peers = ReadPeers {
                reads_from: |peer: usize| peer != plan.rank,
                inputs: None,
            };
            let storages = dense_storages(plan);
            Exchange::new(plan, p, limits, 2, progress, 1 << 20, peers, storages).expect("exchange")
        })
        .collect();
    let results = on_every_rank(&network, &mut exchanges, |r, exchange, endpoint| {
        let input = to_bytes(&inputs[r]);
        let output = execute_rank(&plans[r], exchange, endpoint, run, true, &input);
        (output, exchange.direct_streams())
    });
    let report = network.report();
    assert!(!report.deadlocked, "the exchange deadlocked: {}", case());
    assert_eq!(report.unmatched, 0, "unmatched messages: {}", case());
    for (r, (result, direct)) in results.into_iter().enumerate() {
        match (result, direct.count) {
            (Ok(output), 0) => assert_eq!(output, to_bytes(&outputs[r]), "rank {r}: {}", case()),
            (Err(e), 1..) => assert!(e.contains("read"), "rank {r}: {e}: {}", case()),
            (Ok(_), n) => panic!("rank {r} has {n} direct streams yet succeeded: {}", case()),
            (Err(e), 0) => panic!("rank {r} has no direct stream yet failed: {e}: {}", case()),
        }
    }
}
