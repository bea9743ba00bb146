//! The cost model: what a kernel operation costs the CPU that runs it.
//!
//! Kernel metadata (zone watermark words, vm_stat, zone->lock, pgdat, the
//! zonelist arrays and the zonelist cache) is laid out in cache lines, each
//! homed on a node. Touching a line costs `line_miss_ns` scaled by the SLIT
//! distance from the touching CPU's node to the line's home node, unless the
//! same CPU already touched that line during the same kernel entry (then it
//! costs `line_hit_ns`).
//!
//! Lines are not assumed to survive *between* kernel entries: the workloads
//! this models (a memory hog, streaming writers) clear and store through far
//! more memory between two allocations than the metadata occupies, and the
//! measured baselines of the seeds are consistent with zone metadata being
//! fetched from memory on each allocation (docs/calibration.md).

use crate::spec::CostSpec;

/// Accumulates the simulated cost of one task step.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctx {
    pub cpu: usize,
    pub node: usize,
    /// Simulated time at which the step started (ns).
    pub now: u64,
    /// Kernel time spent so far in this step (ns).
    pub sys: u64,
    /// Part of `sys` spent spinning on a contended lock (ns).
    pub spin: u64,
    /// User time spent in this step (ns).
    pub user: u64,
    /// The task doing the work (`current`).
    pub pid: u32,
}

impl Ctx {
    /// The simulated time the task has reached within this step.
    #[inline]
    pub fn clock(&self) -> u64 {
        self.now + self.sys + self.user
    }
}

/// Per-CPU record of the cache lines touched in the current kernel entry.
pub struct CacheModel {
    nlines: usize,
    /// Home node of each line.
    home: Vec<u16>,
    /// stamp[cpu * nlines + line] == gen[cpu] when touched in this entry.
    stamp: Vec<u32>,
    gen: Vec<u32>,
    /// miss_ns[from_node * nodes + home_node].
    miss_ns: Vec<u64>,
    nodes: usize,
    hit_ns: u64,
    pub lines_touched: u64,
    pub remote_lines: u64,
}

impl CacheModel {
    pub fn new(home: Vec<u16>, cpus: usize, distance: &[Vec<u32>], cost: &CostSpec) -> Self {
        let nodes = distance.len();
        let mut miss_ns = vec![0u64; nodes * nodes];
        for a in 0..nodes {
            for b in 0..nodes {
                miss_ns[a * nodes + b] = cost.line_miss_ns * distance[a][b] as u64 / 10;
            }
        }
        let nlines = home.len();
        CacheModel {
            nlines,
            home,
            stamp: vec![0; cpus * nlines],
            gen: vec![1; cpus],
            miss_ns,
            nodes,
            hit_ns: cost.line_hit_ns,
            lines_touched: 0,
            remote_lines: 0,
        }
    }

    /// A new kernel entry on `cpu`: nothing touched yet.
    #[inline]
    pub fn enter(&mut self, cpu: usize) {
        let g = &mut self.gen[cpu];
        *g = g.wrapping_add(1);
        if *g == 0 {
            // Wrapped: forget every stamp of this CPU so no stale match remains.
            let base = cpu * self.nlines;
            self.stamp[base..base + self.nlines].fill(0);
            *g = 1;
        }
    }

    /// Touch `line` from `ctx.cpu`; charges ctx.sys.
    #[inline]
    pub fn touch(&mut self, ctx: &mut Ctx, line: usize) {
        let idx = ctx.cpu * self.nlines + line;
        let g = self.gen[ctx.cpu];
        if self.stamp[idx] == g {
            ctx.sys += self.hit_ns;
        } else {
            self.stamp[idx] = g;
            let home = self.home[line] as usize;
            ctx.sys += self.miss_ns[ctx.node * self.nodes + home];
            self.lines_touched += 1;
            if home != ctx.node {
                self.remote_lines += 1;
            }
        }
    }

    pub fn state_bytes(&self) -> u64 {
        (self.stamp.len() * 4 + self.gen.len() * 4 + self.miss_ns.len() * 8 + self.home.len() * 2) as u64
    }

    pub fn nlines(&self) -> usize {
        self.nlines
    }
}
