//! What the exchange engines (out of place, and the in-place schedule's rounds)
//! need from point-to-point messaging, as a trait: MPI implements it
//! (`crate::mpi::p2p`, on the private communicator) and, with the `testing`
//! feature, an in-memory network does (`crate::testing`), so that the tests drive
//! the very engines that run over MPI on every rank of one process. The engines
//! are generic over it and monomorphized: MPI pays nothing for it.

use std::os::raw::c_int;

use crate::core::error::Result;
use crate::planning::schedule::Side;

/// Blocks of bytes at one stride: `blocks` blocks of `block` bytes, each `stride`
/// bytes after the one before (one block, or a stride of `block`: contiguous).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockShape {
    /// Bytes per block.
    pub block: usize,
    /// How many blocks.
    pub blocks: usize,
    /// Bytes from the start of one block to the start of the next.
    pub stride: usize,
}

impl BlockShape {
    /// `len` contiguous bytes.
    pub fn contiguous(len: usize) -> BlockShape {
        BlockShape {
            block: len,
            blocks: 1,
            stride: len,
        }
    }

    /// How many bytes the blocks hold.
    pub fn total_bytes(&self) -> usize {
        self.block * self.blocks
    }

    /// True when the blocks follow one another without gaps.
    pub fn is_contiguous(&self) -> bool {
        self.blocks <= 1 || self.stride == self.block
    }
}

/// The bytes of one message: blocks of `shape`, the first at `at`, read by a
/// send, written by a receive. Both ends of a message move the same number of
/// bytes, each laid out in its own blocks.
#[derive(Clone, Copy, Debug)]
pub struct Bytes {
    /// The first byte (may be dangling when nothing moves).
    pub at: *mut u8,
    /// How the bytes lie from `at`.
    pub shape: BlockShape,
}

impl Bytes {
    /// `len` contiguous bytes at `at`.
    pub fn contiguous(at: *mut u8, len: usize) -> Bytes {
        Bytes {
            at,
            shape: BlockShape::contiguous(len),
        }
    }

    /// How many bytes the message moves.
    pub fn total_bytes(&self) -> usize {
        self.shape.total_bytes()
    }

    /// The start of block `i`.
    pub fn block_at(&self, i: usize) -> *mut u8 {
        self.at.wrapping_add(i * self.shape.stride)
    }

    /// The blocks, each as its first byte and its length, in order.
    pub fn runs(&self) -> impl Iterator<Item = (*mut u8, usize)> + use<> {
        let bytes = *self;
        (0..bytes.shape.blocks).map(move |i| (bytes.block_at(i), bytes.shape.block))
    }
}

/// The bytes of one message of a batch: blocks of `shape` `offset` bytes after
/// each field's base, field after field (a send reads them in that order, a
/// receive writes them so), so that one message carries every field's part.
#[derive(Clone, Copy, Debug)]
pub struct FieldBytes<'a> {
    /// Bytes from each base to the first block.
    pub offset: usize,
    /// How the bytes lie in each field.
    pub shape: BlockShape,
    /// The fields' buffers, in order.
    pub bases: &'a [*mut u8],
}

impl FieldBytes<'_> {
    /// The bytes in field `i`.
    pub fn field(&self, i: usize) -> Bytes {
        Bytes {
            at: self.bases[i].wrapping_add(self.offset),
            shape: self.shape,
        }
    }

    /// How many bytes the message moves.
    #[cfg(feature = "testing")]
    pub fn total_bytes(&self) -> usize {
        self.shape.total_bytes() * self.bases.len()
    }
}

/// One block of a list of blocks ([`Transport::block_list`]): `len` bytes
/// `offset` bytes after the base the list is counted from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// Bytes from the base to the block's first byte.
    pub offset: usize,
    /// Bytes in the block.
    pub len: usize,
}

/// Part of a message made of block lists ([`Transport::start_lists`]): the
/// blocks of `list` counted from `base`.
#[derive(Debug)]
pub struct ListPart<'a, L> {
    /// Where the list's offsets count from.
    pub base: *mut u8,
    /// The blocks.
    pub list: &'a L,
}

/// Most parts of one message made of block lists.
pub(crate) const MAX_LIST_PARTS: usize = 2;

/// Copies the bytes of `from`'s blocks, in order, into `to`'s blocks (the same
/// number of bytes, laid out in blocks of their own).
///
/// # Safety
/// Every block of `from` readable, every block of `to` writable, the two disjoint.
pub unsafe fn copy_blocks(from: Bytes, to: Bytes) {
    // SAFETY: forwarded from the caller.
    unsafe { copy_runs(from.runs(), to.runs()) }
}

/// Copies the bytes of the runs `from` (first byte and length each), in order,
/// into the runs `to`, which hold at least as many bytes.
///
/// # Safety
/// Every run of `from` readable, every run of `to` writable, the two disjoint.
pub unsafe fn copy_runs(
    from: impl IntoIterator<Item = (*mut u8, usize)>,
    to: impl IntoIterator<Item = (*mut u8, usize)>,
) {
    let mut to = to.into_iter();
    let (mut at, mut room) = (std::ptr::null_mut::<u8>(), 0);
    for (mut src, mut left) in from {
        while left > 0 {
            if room == 0 {
                (at, room) = to.next().expect("room for every byte copied");
                continue;
            }
            let n = left.min(room);
            // SAFETY: both ranges lie within a run of their side (as documented).
            unsafe {
                std::ptr::copy_nonoverlapping(src, at, n);
                (src, at) = (src.add(n), at.add(n));
            }
            (left, room) = (left - n, room - n);
        }
    }
}

/// One joint run read straight from a peer's memory into this rank's: `len`
/// bytes at the peer's address `remote` into `local`.
#[derive(Clone, Copy, Debug)]
pub struct ReadRun {
    /// The address of the run's first byte in the peer's memory.
    pub remote: usize,
    /// Where the run goes in this rank's memory.
    pub local: *mut u8,
    /// Bytes in the run.
    pub len: usize,
}

/// Rows read straight from a peer's memory into this rank's: `rows` runs the
/// size of `first`, each `pitch` bytes on from the one before on both sides
/// (one run when `rows` is 1). Given as rows, a strided box need not be walked
/// row by row where the transport reads its rows as one run.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(
    not(any(direct_reads, feature = "testing")),
    allow(
        dead_code,
        reason = "only the transports that read directly look at the rows"
    )
)]
pub struct ReadRows {
    /// The first row.
    pub first: ReadRun,
    /// How many rows, at least 1.
    pub rows: usize,
    /// From one row's first byte to the next row's.
    pub pitch: Pitch,
}

/// The bytes from one row's first byte to the next row's, in the peer's memory
/// and in this rank's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pitch {
    /// In the peer's memory.
    pub remote: usize,
    /// In this rank's.
    pub local: usize,
}

impl ReadRows {
    /// One run.
    pub fn one(run: ReadRun) -> ReadRows {
        ReadRows {
            first: run,
            rows: 1,
            pitch: Pitch::default(),
        }
    }

    /// `rows` rows from `first`, `pitch` apart; one run when they follow one
    /// another on both sides.
    pub fn new(first: ReadRun, rows: usize, pitch: Pitch) -> ReadRows {
        let len = first.len;
        debug_assert!(
            rows >= 1 && (rows == 1 || (pitch.remote >= len && pitch.local >= len)),
            "rows that do not overlap"
        );
        match pitch.remote == len && pitch.local == len {
            true => ReadRows::one(ReadRun {
                len: rows * len,
                ..first
            }),
            false => ReadRows { first, rows, pitch },
        }
    }

    /// The rows, in order.
    #[cfg_attr(
        not(any(direct_reads, feature = "testing")),
        allow(
            dead_code,
            reason = "only the transports that read directly look at the rows"
        )
    )]
    pub fn each(&self) -> impl Iterator<Item = ReadRun> + '_ {
        (0..self.rows).map(|k| ReadRun {
            remote: self.first.remote + k * self.pitch.remote,
            local: self.first.local.wrapping_add(k * self.pitch.local),
            len: self.first.len,
        })
    }
}

/// What a direct read may do with the reader's bytes between two of the runs
/// (or rows) it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Between {
    /// Nothing: they belong to others.
    Untouched,
    /// Write them: they are the reader's scratch (a bounce buffer that keeps
    /// the peer's short gaps between runs), so a run that follows the last
    /// after the same short gap on both sides may be read with the gap, as one.
    Scratch,
}

/// The tags of one execution's control messages for direct reads
/// ([`Transport::read`]): the sender's announcement of its buffer, and the
/// reader's acknowledgement that it is done with it. Both differ from every data
/// tag, and from each other, so no control message ever matches a data message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlTags {
    /// The announcement's tag.
    pub announcement: c_int,
    /// The acknowledgement's tag.
    pub acknowledgement: c_int,
}

/// Who one message goes to or comes from, and how it is matched: messages between
/// two ranks with the same tag match in the order they were started, as in MPI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Envelope {
    /// Which way the message goes.
    pub side: Side,
    /// The other rank.
    pub peer: usize,
    /// The tag of the execution the message belongs to.
    pub tag: c_int,
}

/// A transport and the tag of one execution: where an engine's messages go.
#[derive(Debug)]
pub struct Channel<'a, T> {
    /// The messaging between the plan's ranks.
    pub transport: &'a T,
    /// The execution's tag.
    pub tag: c_int,
}

impl<T> Clone for Channel<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Channel<'_, T> {}

impl<T> Channel<'_, T> {
    /// The envelope of a message of this channel with `peer` on `side`.
    pub fn envelope(&self, side: Side, peer: usize) -> Envelope {
        Envelope {
            side,
            peer,
            tag: self.tag,
        }
    }
}

/// Point-to-point messaging between the ranks of one plan: non-blocking sends and
/// receives of bytes, completed by request handles.
pub trait Transport {
    /// The handle of one started send or receive; [`Transport::null_request`]
    /// once it has completed (or when none was started).
    type Request: Copy;

    /// The handle of no operation, which completion calls skip.
    fn null_request() -> Self::Request;

    /// The tag of the plan's `execution`-th execution: the executions' tags differ,
    /// so that the messages of a failed execution never match a later one's.
    fn tag(&self, execution: u64) -> c_int;

    /// The tags of the `execution`-th execution's control messages for direct
    /// reads.
    fn control_tags(&self, execution: u64) -> ControlTags;

    /// Reads the rows of `runs`, in order, straight from `peer`'s memory into
    /// this rank's: `peer` must be one of the ranks this rank reads directly
    /// (the exchange is told which when it is made). `between` says whether this
    /// rank's bytes between two rows may be written too.
    ///
    /// # Safety
    /// Every row's `local` bytes writable and untouched by anything else during
    /// the call, and so the bytes between rows when `between` is
    /// [`Between::Scratch`]; the peer keeps every row's `remote` bytes readable
    /// and unchanged until it learns that the read is done.
    unsafe fn read(&self, peer: usize, runs: &[ReadRows], between: Between) -> Result<()>;

    /// A list of blocks made ready for messages made of it (MPI: a committed
    /// indexed datatype), made once per plan and kept.
    type BlockList;

    /// Makes `blocks`, in this order, ready for messages made of them.
    fn block_list(&self, blocks: &[Block]) -> Result<Self::BlockList>;

    /// Starts sending or receiving the blocks of `parts`, one part after the
    /// other (at most [`MAX_LIST_PARTS`]), as `envelope` says.
    ///
    /// # Safety
    /// Every block valid (readable for a send, writable for a receive) and not
    /// touched by anything else until `request` completes.
    unsafe fn start_lists(
        &self,
        envelope: Envelope,
        parts: &[ListPart<'_, Self::BlockList>],
        request: &mut Self::Request,
    ) -> Result<()>;

    /// Starts sending or receiving `bytes` as `envelope` says.
    ///
    /// # Safety
    /// Every block of `bytes` valid (readable for a send, writable for a receive)
    /// and not touched by anything else until `request` completes.
    unsafe fn start(
        &self,
        envelope: Envelope,
        bytes: Bytes,
        request: &mut Self::Request,
    ) -> Result<()>;

    /// Starts sending or receiving the blocks of every field of `fields`, field
    /// after field, as one message, as `envelope` says.
    ///
    /// # Safety
    /// Every block of every field valid (readable for a send, writable for a
    /// receive) and not touched by anything else until `request` completes.
    unsafe fn start_fields(
        &self,
        envelope: Envelope,
        fields: FieldBytes<'_>,
        request: &mut Self::Request,
    ) -> Result<()>;

    /// Completes every request of `requests`: waits when `blocking`, else only
    /// tests; returns whether they have all completed (each then null).
    fn complete_all(&self, requests: &mut [Self::Request], blocking: bool) -> Result<bool>;

    /// Completes at least one active request of `requests` when `blocking` (else
    /// those that have completed, maybe none): nulls each and writes its index into
    /// `completed` (which holds `requests.len()` entries); returns how many.
    fn complete_some(
        &self,
        requests: &mut [Self::Request],
        completed: &mut [c_int],
        blocking: bool,
    ) -> Result<usize>;

    /// Cancels every active request of `requests` and completes it, so that no
    /// buffer is released while a message may still use it; errors are moot there
    /// (the execution has already failed).
    fn cancel_all(&self, requests: &mut [Self::Request]);
}
