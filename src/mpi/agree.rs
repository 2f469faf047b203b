//! Collective agreement on the outcome of a step, so that every rank returns the
//! same status and no rank is left waiting in an exchange another rank skipped.

use crate::core::abi::dr_status;
use crate::core::error::{Error, Result};
use crate::mpi::comm::Comm;
use crate::planning::args::FINGERPRINT_LEN;

/// Longest error detail shared with the other ranks, in bytes.
const MESSAGE_BYTES: usize = 1024;

/// The agreed key packs the failing rank and its status as
/// `(size - rank) * STATUS_RADIX + code`, so every status code must be below it.
const STATUS_RADIX: i64 = 64;
const _: () = assert!((dr_status::ALL.len() as i64) <= STATUS_RADIX);

/// Most values [`agree`] can piggyback.
pub(crate) const MAX_PIGGYBACK: usize = 2 * FINGERPRINT_LEN;

/// Agrees over `comm` on whether any rank failed. Returns `Ok` on every rank when
/// no rank has a `local` error; otherwise every rank returns the error of the
/// lowest failing rank, with that rank's message. `piggyback` values (at most
/// [`MAX_PIGGYBACK`]) are max-reduced in the same collective. Allocates nothing
/// unless some rank failed.
pub fn agree(comm: &Comm, local: Option<&Error>, piggyback: &mut [i64]) -> Result<()> {
    let key = local.map_or(0, |e| {
        (comm.size() - comm.rank()) as i64 * STATUS_RADIX + i64::from(e.code())
    });
    let n = piggyback.len();
    let mut values = [0i64; MAX_PIGGYBACK + 1];
    values[..n].copy_from_slice(piggyback);
    values[n] = key;
    comm.allreduce_max(&mut values[..=n])?;
    piggyback.copy_from_slice(&values[..n]);
    let key = values[n];
    if key == 0 {
        return Ok(());
    }
    let root = comm.size() - (key / STATUS_RADIX) as usize;
    let mut message = [0u8; MESSAGE_BYTES];
    if let (true, Some(error)) = (comm.rank() == root, local) {
        let detail = truncate(error.detail(), MESSAGE_BYTES);
        message[..detail.len()].copy_from_slice(detail.as_bytes());
    }
    comm.broadcast(&mut message, root)?;
    let end = message
        .iter()
        .position(|&b| b == 0)
        .unwrap_or(MESSAGE_BYTES);
    let mut detail = String::from_utf8_lossy(&message[..end]).into_owned();
    match local {
        Some(own) if comm.rank() != root => {
            detail += &format!("; rank {} also found: {own}", comm.rank());
        }
        None => detail += &format!(" (reported to rank {})", comm.rank()),
        _ => {}
    }
    Err(Error::from_code((key % STATUS_RADIX) as i32, detail))
}

/// Every rank's error when the ranks passed different values: `describe(other)`
/// is this rank's error, naming `other`, the lowest rank that passed the
/// largest value (where `differs` is false); every rank returns that of the
/// lowest rank that `differs`, so that all name the same two ranks. Two
/// collectives, on this error path only.
pub fn agree_on_difference(
    comm: &Comm,
    differs: bool,
    describe: impl FnOnce(usize) -> Error,
) -> Error {
    let mut holder = [if differs {
        i64::MIN
    } else {
        -(comm.rank() as i64)
    }];
    if let Err(failed) = comm.allreduce_max(&mut holder) {
        return failed;
    }
    let own = describe((-holder[0]) as usize);
    match agree(comm, differs.then_some(&own), &mut []) {
        Err(agreed) => agreed,
        Ok(()) => own,
    }
}

/// The longest prefix of `s` that fits in `max` bytes and ends on a char boundary.
pub(crate) fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
