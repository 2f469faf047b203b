//! The tuning knobs of a plan, their defaults, and the message limits they give;
//! setting one by its `dr_option` (the C and Python surfaces) with its range
//! checked.
//!
//! The tuned constants that are not options sit below this layer, so that
//! planning imports nothing from here: those of executions in place (which
//! pieces travel alone or grouped, when packing all that a rank sends beats a
//! schedule, the scheduling state per piece, the bounds on making a schedule) are
//! in [`crate::planning::inplace::thresholds`].

use crate::core::abi::dr_option;
use crate::core::error::{Error, Result};
use crate::mpi::library::Switches;
use crate::planning::messages::{MessageLimits, StridedRuns};

/// Tuning knobs of a plan. The defaults suit production; tests lower the limits to
/// exercise the chunked paths with small arrays. They may differ between ranks:
/// the ranks agree on the smallest `max_message_bytes`, `slot_bytes` and
/// `run_budget` any of them sets, since both ends of a message must cut it
/// alike; `in_place_budget` is each rank's own.
///
/// The switches (`strided_sends` to `sleeping_waits`) choose how the exchange moves
/// data. Each is `None` by default: the switch's `DISTRESHAPE_*` environment
/// variable decides when it is set to `1` or `0` (the environment only overrides
/// the defaults), else the choice measured for the MPI library and the node.
/// `Some(true)` or `Some(false)` forces it for this plan, whatever the
/// environment says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanOptions {
    /// Most bytes in one MPI message (MPI counts are 32-bit; default `i32::MAX`).
    pub max_message_bytes: usize,
    /// The message slots for packed messages (small runs, and long runs at a
    /// stride where they travel through the slots: `crate::mpi::library`), per
    /// direction, over all peers (default [`PlanOptions::DEFAULT_SLOT_BYTES`]):
    /// packed messages are capped at this divided by the largest peer count of
    /// any rank (but at least [`PlanOptions::MIN_PACKED_BYTES`]), so the slots
    /// never exceed it by more than that floor times the peer count, nor the
    /// bytes actually moved.
    pub slot_bytes: usize,
    /// Most runs cut into the messages of one round, over all peers (default
    /// [`PlanOptions::DEFAULT_RUN_BUDGET`]): bounds the memory that lists them (16
    /// bytes per run). Also the most segments and local copies (16-24 bytes each) a
    /// plan lists once at creation and keeps, so that executions replay them
    /// instead of cutting the runs again, and the most pieces of an in-place
    /// schedule. The runs of direct reads within a node (24 bytes each, at most
    /// one per 32 KiB read by default) are always listed.
    pub run_budget: usize,
    /// Peers per window on the exchange path (default
    /// [`PlanOptions::DEFAULT_WINDOW`]): a rank has streams with about this many
    /// peers per direction in flight, like the throttled all-to-alls of MPI
    /// libraries. A window spans a range of pairwise distances, agreed by the ranks:
    /// the narrowest that holds this many peers of a rank in its first window (see
    /// `planning::schedule`).
    pub window: usize,
    /// Most extra bytes an execution in place on the exchange path takes on a rank,
    /// its staging and the schedule being made (default `None`: the larger of
    /// [`PlanOptions::IN_PLACE_BUDGET_FLOOR`] and the rank's buffer divided by
    /// [`PlanOptions::IN_PLACE_BUDGET_DIVISOR`], less the 64th left to MPI's own
    /// buffers, [`PlanOptions::IN_PLACE_MPI_SHARE`]). The data then moves in rounds
    /// scheduled for that budget (`planning::inplace`), when the schedule has at
    /// most `run_budget` pieces and `run_budget` is at least the square of the rank
    /// count; otherwise everything a rank sends is packed into a buffer of exactly
    /// those bytes.
    pub in_place_budget: Option<usize>,
    /// Long runs at a stride may travel through strided datatypes on both sides
    /// (`DISTRESHAPE_STRIDED_SENDS`; measured: on under Open MPI, where it was
    /// faster).
    pub strided_sends: Option<bool>,
    /// Long runs at a stride travel through the message slots, packed, above the
    /// other ways (`DISTRESHAPE_STRIDED_SLOTS`; measured: on unless the library is
    /// Open MPI, on a node with more than two ranks per processor).
    pub strided_slots: Option<bool>,
    /// Every long run at a stride is a message of its own, below slots and above
    /// strided sends (`DISTRESHAPE_RUN_MESSAGES`; measured: on under MPICH).
    pub run_messages: Option<bool>,
    /// This rank proposes that the ranks of its node read one another's long runs
    /// directly, where the kernel allows it; decided for a communicator at the
    /// first plan on it that reads directly (`DISTRESHAPE_DIRECT_READS`;
    /// measured: on a node with more than two ranks per processor, and, unless
    /// some rank turns them off, for plans with strided storage).
    pub direct_reads: Option<bool>,
    /// The plan's waits on a node with more ranks than processors sleep between
    /// polls once they have yielded a while (`DISTRESHAPE_SLEEPING_WAITS`;
    /// measured: on under MPICH, whose waits spin).
    pub sleeping_waits: Option<bool>,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            max_message_bytes: i32::MAX as usize,
            slot_bytes: PlanOptions::DEFAULT_SLOT_BYTES,
            run_budget: PlanOptions::DEFAULT_RUN_BUDGET,
            window: PlanOptions::DEFAULT_WINDOW,
            in_place_budget: None,
            strided_sends: None,
            strided_slots: None,
            run_messages: None,
            direct_reads: None,
            sleeping_waits: None,
        }
    }
}

impl PlanOptions {
    /// The default [`PlanOptions::slot_bytes`]: 16 MiB.
    pub const DEFAULT_SLOT_BYTES: usize = 16 << 20;

    /// The default [`PlanOptions::run_budget`]: 2^18 runs.
    pub const DEFAULT_RUN_BUDGET: usize = 1 << 18;

    /// The default [`PlanOptions::window`]: 64 peers (MPICH's own throttle is
    /// 32).
    pub const DEFAULT_WINDOW: usize = 64;

    /// The default in-place staging budget of a rank is at least this: 64 MiB.
    pub const IN_PLACE_BUDGET_FLOOR: usize = 64 << 20;

    /// The default in-place staging budget of a rank is at least its buffer divided
    /// by this (a tenth), when that exceeds [`PlanOptions::IN_PLACE_BUDGET_FLOOR`].
    pub const IN_PLACE_BUDGET_DIVISOR: usize = 10;

    /// The default in-place budget leaves this share of the memory bound to MPI
    /// (one 64th: 1 MiB of 64): the buffers MPI grows itself during an execution
    /// count against the bound too: with the whole bound as budget, a first
    /// execution in place exceeded it (docs/src/performance/analysis.md,
    /// "Allocations").
    pub const IN_PLACE_MPI_SHARE: usize = 64;

    /// Packed messages are capped at no less than this (64 KiB), however many
    /// peers share [`PlanOptions::slot_bytes`].
    pub const MIN_PACKED_BYTES: usize = 64 << 10;

    /// Packed messages are capped at no more than this (1 GiB).
    pub const MAX_PACKED_BYTES: usize = 1 << 30;

    /// Runs of at least this many bytes (64 KiB, or the packed cap when smaller)
    /// travel as messages of their own, straight between the buffers; smaller ones
    /// are packed.
    pub const DIRECT_BYTES: usize = 64 << 10;

    /// A batch's message whose part of one field holds at least this many bytes
    /// (32 KiB) travels as one message per field; shorter ones carry every
    /// field in one message (docs/src/performance/grids.md, "Batches").
    pub const FIELD_MESSAGE_BYTES: usize = 32 << 10;

    /// Shorter runs of at least this many bytes (1 KiB) that follow one another
    /// at one stride in the sender's buffer, back to back in the receiver's,
    /// travel together as one strided send where the MPI library's strided
    /// datatypes pay (Open MPI); other short runs are packed.
    pub const STRIDED_SHORT_BYTES: usize = 1 << 10;

    /// Sets `option` to `value` as C and Python pass it: a size or count in its
    /// range, a switch 1 (on) or 0 (off), and -1 for the default. A value out of
    /// range is [`Error::InvalidOption`] naming the option, the value and the
    /// range, and leaves the options unchanged.
    pub fn set(&mut self, option: dr_option, value: i64) -> Result<()> {
        use dr_option::*;
        let defaults = PlanOptions::default();
        let sized = |default: usize, max: i64| match value {
            -1 => Ok(default),
            n => in_range(option, n, (1, max)),
        };
        let switch = || match value {
            -1 => Ok(None),
            n => in_range(option, n, (0, 1)).map(|on| Some(on == 1)),
        };
        match option {
            DR_OPTION_MAX_MESSAGE_BYTES => {
                self.max_message_bytes = sized(defaults.max_message_bytes, i32::MAX.into())?
            }
            DR_OPTION_SLOT_BYTES => self.slot_bytes = sized(defaults.slot_bytes, i64::MAX)?,
            DR_OPTION_RUN_BUDGET => self.run_budget = sized(defaults.run_budget, i64::MAX)?,
            DR_OPTION_WINDOW => self.window = sized(defaults.window, i64::MAX)?,
            DR_OPTION_IN_PLACE_BUDGET => {
                self.in_place_budget = match value {
                    -1 => None,
                    n => Some(in_range(option, n, (0, i64::MAX))?),
                }
            }
            DR_OPTION_STRIDED_SENDS => self.strided_sends = switch()?,
            DR_OPTION_STRIDED_SLOTS => self.strided_slots = switch()?,
            DR_OPTION_RUN_MESSAGES => self.run_messages = switch()?,
            DR_OPTION_DIRECT_READS => self.direct_reads = switch()?,
            DR_OPTION_SLEEPING_WAITS => self.sleeping_waits = switch()?,
        }
        Ok(())
    }

    /// The switches of these options, completed by the environment variables.
    pub(crate) fn switches(&self) -> Switches {
        Switches {
            strided_sends: self.strided_sends,
            strided_slots: self.strided_slots,
            run_messages: self.run_messages,
            direct_reads: self.direct_reads,
            sleeping_waits: self.sleeping_waits,
        }
        .with_environment()
    }

    /// The message limits when the busiest rank talks to `peers` ranks per
    /// direction, with long strided runs travelling as `strided_runs` (agreed by
    /// the ranks).
    pub(super) fn limits(&self, peers: usize, strided_runs: StridedRuns) -> MessageLimits {
        let max_bytes = self.max_message_bytes.max(1);
        let packed_bytes = (self.slot_bytes / peers)
            .clamp(PlanOptions::MIN_PACKED_BYTES, PlanOptions::MAX_PACKED_BYTES)
            .min(max_bytes);
        MessageLimits {
            max_bytes,
            direct_bytes: packed_bytes.min(PlanOptions::DIRECT_BYTES),
            strided_short_bytes: PlanOptions::STRIDED_SHORT_BYTES,
            packed_bytes,
            max_runs: (self.run_budget / peers).max(1),
            strided_runs,
            packs_all: false,
            field_message_bytes: PlanOptions::FIELD_MESSAGE_BYTES,
        }
    }

    /// A rank's default in-place staging budget when its buffer holds
    /// `buffer_bytes`: the memory bound, the larger of
    /// [`PlanOptions::IN_PLACE_BUDGET_FLOOR`] and the buffer over
    /// [`PlanOptions::IN_PLACE_BUDGET_DIVISOR`], less MPI's share of it
    /// ([`PlanOptions::IN_PLACE_MPI_SHARE`]).
    pub(crate) fn default_in_place_budget(buffer_bytes: usize) -> usize {
        let bound = PlanOptions::IN_PLACE_BUDGET_FLOOR
            .max(buffer_bytes / PlanOptions::IN_PLACE_BUDGET_DIVISOR);
        bound - bound / PlanOptions::IN_PLACE_MPI_SHARE
    }
}

/// `value` of `option` when it is in `[min, max]` (and fits a `usize`).
fn in_range(option: dr_option, value: i64, (min, max): (i64, i64)) -> Result<usize> {
    (min..=max)
        .contains(&value)
        .then(|| usize::try_from(value).ok())
        .flatten()
        .ok_or_else(|| {
            Error::InvalidOption(format!(
                "options.{} = {value} is out of range: {min} to {max}, or -1 for the default",
                option.name()
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_takes_every_option_by_key_and_refuses_what_is_out_of_range() {
        let mut options = PlanOptions::default();
        for option in dr_option::ALL {
            options.set(option, 1).unwrap();
        }
        assert_eq!(options.switches().sleeping_waits, Some(true));
        assert_eq!((options.window, options.in_place_budget), (1, Some(1)));
        options.set(dr_option::DR_OPTION_STRIDED_SENDS, 0).unwrap();
        options.set(dr_option::DR_OPTION_WINDOW, -1).unwrap();
        assert_eq!(options.strided_sends, Some(false));
        assert_eq!(options.window, PlanOptions::DEFAULT_WINDOW);
        let before = options;
        let refused = options
            .set(dr_option::DR_OPTION_RUN_MESSAGES, 2)
            .unwrap_err();
        assert_eq!(
            refused.to_string(),
            "invalid plan option: options.run_messages = 2 is out of range: 0 to 1, or -1 for the default"
        );
        assert_eq!(options, before);
        options.set(dr_option::DR_OPTION_DIRECT_READS, -1).unwrap();
        assert_eq!(options.direct_reads, None);
    }
}
