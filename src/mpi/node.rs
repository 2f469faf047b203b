//! What the launcher and the system say of this node: how many ranks of the job it
//! runs for each of its online processors, which decides how a rank waits
//! (`crate::mpi::waiting`) and how long strided runs travel
//! (`crate::mpi::library`).

use std::sync::OnceLock;

/// Launcher variables giving the number of ranks of the job on this node: Open
/// MPI's, then MPICH's (Hydra).
const LOCAL_SIZE_VARIABLES: [&str; 2] = ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"];

/// The ranks of the job on this node, when the launcher says, and the node's
/// online processors (when the system says: positive).
#[derive(Clone, Copy, Debug)]
struct NodeLoad {
    local_ranks: Option<libc::c_long>,
    processors: libc::c_long,
}

impl NodeLoad {
    /// True when both counts are known and the node runs more than
    /// `ranks_per_processor` ranks per processor.
    fn exceeds(&self, ranks_per_processor: libc::c_long) -> bool {
        matches!(self.local_ranks, Some(n) if self.processors > 0
            && n > self.processors.saturating_mul(ranks_per_processor))
    }
}

/// This node's load, read once per process, at the first plan's creation (reading
/// the environment allocates).
fn node_load() -> NodeLoad {
    static LOAD: OnceLock<NodeLoad> = OnceLock::new();
    *LOAD.get_or_init(|| NodeLoad {
        local_ranks: LOCAL_SIZE_VARIABLES
            .iter()
            .find_map(|name| std::env::var(name).ok()?.trim().parse().ok()),
        // SAFETY: sysconf only reads a system value.
        processors: unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) },
    })
}

/// True when the launcher says this node runs more ranks than it has online
/// processors.
pub fn oversubscribed() -> bool {
    node_load().exceeds(1)
}

/// True when the launcher says this node runs more than two ranks per online
/// processor.
pub fn crowded() -> bool {
    node_load().exceeds(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exceeded_only_with_more_ranks_per_processor_known() {
        let load = |local_ranks, processors| NodeLoad {
            local_ranks,
            processors,
        };
        assert!(load(Some(4), 2).exceeds(1));
        assert!(!load(Some(2), 2).exceeds(1));
        assert!(!load(Some(4), 2).exceeds(2));
        assert!(load(Some(5), 2).exceeds(2));
        assert!(!load(None, 2).exceeds(1));
        assert!(!load(Some(4), -1).exceeds(1));
    }
}
