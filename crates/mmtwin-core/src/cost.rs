//! The cost model: what a kernel operation costs the CPU that runs it.
//!
//! Kernel metadata (zone watermark words, vm_stat, zone->lock, pgdat, the
//! zonelist arrays and the zonelist cache, the per-cpu pagesets, each
//! process's mm_struct) is laid out in cache lines, each homed on a node,
//! and kept coherent as the hardware does ([`CacheModel`]): a line stays in
//! a CPU's cache until another CPU writes it or the CPU's own streaming
//! (clearing pages, copying data) pushes it out, and a miss costs what the
//! protocol does (the home's memory, another CPU's modified copy, the
//! invalidation of the other copies), waiting behind the line's other
//! transactions at its home.
//!
//! Until 2026-11-23 every line was forgotten at each kernel entry and a
//! touch cost one miss at the SLIT-scaled latency whoever had written it
//! last (docs/calibration.md).

use crate::mm::LockHolds;
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

/// No CPU: a line nobody holds modified.
pub const NO_CPU: u16 = u16::MAX;
/// `seen` of a CPU that holds no copy of the line.
const NOT_HELD: u64 = u64::MAX;

/// The coherence state of the kernel's metadata cache lines, as a
/// directory protocol keeps it (SGI's SN2 hub, or a snooping x86 socket:
/// the costs differ, the states do not).
///
/// Each line has a home node (where its memory is), the CPUs holding a
/// copy (the sharers) and, when one of them has written it, that owner. A
/// CPU keeps its copy until another CPU's write invalidates it or it falls
/// out of the CPU's cache: each CPU counts the bytes it streams through its
/// cache (page clears, copies), and a line it has not touched for more than
/// the cache's size has been evicted (a modified line is written back to its
/// home on the way).
///
/// An access costs, from the requesting CPU's node r, with lat(a, b) the
/// latency of a miss from node a to memory on node b (`line_miss_ns` x
/// SLIT / 10):
/// - a hit (a read of a line the CPU holds, a write of a line it owns):
///   `line_hit_ns`;
/// - a read of a line held modified by another CPU on node o: a three-hop
///   fetch, (lat(r, h) + lat(h, o) + lat(o, r)) / 2, after which both hold
///   it shared and the home's copy is current;
/// - any other read miss: lat(r, h), the home's memory;
/// - a write (or an atomic read-modify-write): the line's data as a read
///   would get it, or lat(r, h) for ownership if the CPU already holds it,
///   and every other sharer s invalidated in parallel, the farthest bounding
///   the wait, (lat(r, h) + lat(h, s) + lat(s, r)) / 2.
///
/// A line's transactions are serialised at its home: a miss waits while
/// another transaction on the same line is in flight (its recent ones kept
/// as simulated-time intervals, as zone->lock keeps its holds); a
/// transaction occupies the line for its own latency, and a read of an
/// unmodified line for lat(h, h), the home's memory access.
pub struct CacheModel {
    ncpus: usize,
    /// u64 words of a sharer set.
    words: usize,
    /// Per line: home node, owner (or NO_CPU), sharers (`words` words).
    home: Vec<u16>,
    owner: Vec<u16>,
    sharers: Vec<u64>,
    /// seen[cpu * cap + line]: the CPU's stream position at its last
    /// touch of the line, or NOT_HELD once a write elsewhere invalidated its
    /// copy. Laid out CPU by CPU: a step runs on one CPU and touches many
    /// lines, so its entries sit together in the host's cache.
    seen: Vec<u64>,
    /// Lines `seen` has room for per CPU.
    cap: usize,
    /// Per line: its recent transactions at the home.
    busy: Vec<LockHolds>,
    /// Per CPU: bytes streamed through its cache.
    stream: Vec<u64>,
    /// Bytes a CPU's cache holds (u64::MAX: lines are never evicted).
    capacity: u64,
    cpu_node: Vec<u16>,
    /// lat[from_node * nodes + home_node].
    lat: Vec<u64>,
    nodes: usize,
    hit_ns: u64,
    /// Lines fetched (misses) and, of them, from another node.
    pub lines_touched: u64,
    pub remote_lines: u64,
    /// Reads served by another CPU's modified copy.
    pub dirty_fetches: u64,
    /// Copies invalidated by writes.
    pub invalidations: u64,
    /// Time spent waiting for a line's earlier transactions (ns).
    pub queue_ns: u64,
}

impl CacheModel {
    /// `home` gives each line's node; `cache_kib` each CPU's cache (0:
    /// unbounded); room is made at once for `more` lines added later
    /// (`add_line`), so the state never grows past its bound.
    pub fn new(home: Vec<u16>, cpu_node: &[usize], distance: &[Vec<u32>], cost: &CostSpec, cache_kib: u64, more: usize) -> Self {
        let nodes = distance.len();
        let mut lat = vec![0u64; nodes * nodes];
        for a in 0..nodes {
            for b in 0..nodes {
                lat[a * nodes + b] = cost.line_miss_ns * distance[a][b] as u64 / 10;
            }
        }
        let ncpus = cpu_node.len();
        let words = ncpus.div_ceil(64).max(1);
        let mut c = CacheModel {
            ncpus,
            words,
            home: Vec::new(),
            owner: Vec::new(),
            sharers: Vec::new(),
            seen: Vec::new(),
            cap: 0,
            busy: Vec::new(),
            stream: vec![0; ncpus],
            capacity: if cache_kib == 0 { u64::MAX } else { cache_kib * 1024 },
            cpu_node: cpu_node.iter().map(|&n| n as u16).collect(),
            lat,
            nodes,
            hit_ns: cost.line_hit_ns,
            lines_touched: 0,
            remote_lines: 0,
            dirty_fetches: 0,
            invalidations: 0,
            queue_ns: 0,
        };
        let n = home.len() + more;
        c.home.reserve_exact(n);
        c.owner.reserve_exact(n);
        c.sharers.reserve_exact(n * words);
        c.cap = n;
        c.seen = vec![NOT_HELD; n * ncpus];
        c.busy.reserve_exact(n);
        for h in home {
            c.add_line(h as usize);
        }
        c
    }

    /// A new line homed on `node` (an mm_struct's, when its process first
    /// faults); returns its index.
    pub fn add_line(&mut self, node: usize) -> usize {
        self.home.push(node as u16);
        self.owner.push(NO_CPU);
        self.sharers.extend(std::iter::repeat_n(0, self.words));
        self.busy.push(LockHolds::default());
        let line = self.home.len() - 1;
        if line >= self.cap {
            // Beyond the room made at the start (not expected): lay `seen`
            // out again with twice the lines per CPU.
            let cap = (self.cap * 2).max(line + 1);
            let mut seen = vec![NOT_HELD; cap * self.ncpus];
            for c in 0..self.ncpus {
                seen[c * cap..c * cap + self.cap].copy_from_slice(&self.seen[c * self.cap..(c + 1) * self.cap]);
            }
            self.seen = seen;
            self.cap = cap;
        }
        line
    }

    #[inline(always)]
    fn at(&self, line: usize, cpu: usize) -> usize {
        cpu * self.cap + line
    }

    /// `bytes` of data went through `cpu`'s cache (a page cleared, a copy).
    #[inline]
    pub fn stream(&mut self, cpu: usize, bytes: u64) {
        self.stream[cpu] += bytes;
    }

    /// Does `cpu` hold a copy of `line`?
    #[inline]
    fn holds(&self, line: usize, cpu: usize) -> bool {
        // `seen` is NOT_HELD unless the CPU is among the sharers (the bit
        // set is kept for walking the sharers on a write).
        let v = self.seen[self.at(line, cpu)];
        v != NOT_HELD && self.stream[cpu] - v <= self.capacity
    }

    #[inline]
    fn lat(&self, a: usize, b: usize) -> u64 {
        self.lat[a * self.nodes + b]
    }

    /// Read `line` from `ctx.cpu`; charges ctx.sys.
    #[inline(always)]
    pub fn read(&mut self, ctx: &mut Ctx, line: usize) {
        let c = ctx.cpu;
        if self.holds(line, c) {
            ctx.sys += self.hit_ns;
            let i = self.at(line, c);
            self.seen[i] = self.stream[c];
            return;
        }
        self.miss(ctx, line, false, false);
    }

    /// Write `line` (a store, a lock taken, an atomic update) from `ctx.cpu`.
    #[inline(always)]
    pub fn write(&mut self, ctx: &mut Ctx, line: usize) {
        let c = ctx.cpu;
        let held = self.holds(line, c);
        if held && self.owner[line] == c as u16 {
            ctx.sys += self.hit_ns;
            let i = self.at(line, c);
            self.seen[i] = self.stream[c];
            return;
        }
        self.miss(ctx, line, true, held);
    }

    /// A read that misses, or a write of a line the CPU does not own.
    #[inline(never)]
    fn miss(&mut self, ctx: &mut Ctx, line: usize, write: bool, held: bool) {
        let c = ctx.cpu;
        let owner = self.owner[line];
        let r = self.cpu_node[c] as usize;
        let h = self.home[line] as usize;
        // A modified copy elsewhere, unless it has been evicted (written back).
        let dirty_at = (owner != NO_CPU && owner as usize != c && self.holds(line, owner as usize)).then_some(owner as usize);
        let mut cost = if held {
            self.lat(r, h) // an upgrade: ownership from the home
        } else if let Some(o) = dirty_at {
            self.dirty_fetches += 1;
            let on = self.cpu_node[o] as usize;
            (self.lat(r, h) + self.lat(h, on) + self.lat(on, r)) / 2
        } else {
            self.lat(r, h)
        };
        let base = line * self.words;
        if write {
            for w in 0..self.words {
                let mut bits = self.sharers[base + w];
                while bits != 0 {
                    let s = w * 64 + bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    if s == c {
                        continue;
                    }
                    let valid = self.holds(line, s);
                    let i = self.at(line, s);
                    self.seen[i] = NOT_HELD;
                    if !valid {
                        continue;
                    }
                    self.invalidations += 1;
                    let sn = self.cpu_node[s] as usize;
                    cost = cost.max((self.lat(r, h) + self.lat(h, sn) + self.lat(sn, r)) / 2);
                }
                self.sharers[base + w] = 0;
            }
            self.owner[line] = c as u16;
        } else if dirty_at.is_some() || (owner != NO_CPU && owner as usize != c) {
            // Downgraded to shared (or found written back): the home is current.
            self.owner[line] = NO_CPU;
        }
        self.sharers[base + c / 64] |= 1u64 << (c % 64);
        let i = self.at(line, c);
        self.seen[i] = self.stream[c];
        self.lines_touched += 1;
        if h != r {
            self.remote_lines += 1;
        }
        // Serialised at the home: wait for the line's transactions in flight.
        let occupancy = if write || dirty_at.is_some() { cost } else { self.lat(h, h) };
        let t = ctx.clock();
        let got = self.busy[line].acquire(ctx.now, t, occupancy);
        let wait = got - t;
        self.queue_ns += wait;
        ctx.sys += wait + cost;
    }

    /// Check the states agree (an owner is among its line's sharers; a CPU
    /// that is not a sharer has no stream position for the line) and
    /// return the number of lines; run by the engine's full checks.
    pub fn check(&self) -> Result<usize, String> {
        for line in 0..self.home.len() {
            let o = self.owner[line];
            if o != NO_CPU {
                let o = o as usize;
                if o >= self.ncpus || self.sharers[line * self.words + o / 64] & (1u64 << (o % 64)) == 0 {
                    return Err(format!("cache line {line}: owner CPU {o} is not among its sharers"));
                }
            }
            for c in 0..self.ncpus {
                let sharer = self.sharers[line * self.words + c / 64] & (1u64 << (c % 64)) != 0;
                if !sharer && self.seen[self.at(line, c)] != NOT_HELD {
                    return Err(format!("cache line {line}: CPU {c} is no sharer but has a stream position"));
                }
            }
        }
        Ok(self.home.len())
    }

    pub fn state_bytes(&self) -> u64 {
        (self.home.capacity() * 2 + self.owner.capacity() * 2 + self.sharers.capacity() * 8 + self.seen.capacity() * 8) as u64
            + (self.busy.capacity() * std::mem::size_of::<LockHolds>()) as u64
            + (self.stream.len() * 8 + self.lat.len() * 8 + self.cpu_node.len() * 2) as u64
    }

    pub fn nlines(&self) -> usize {
        self.home.len()
    }

    /// Bytes per line of state for `cpus` CPUs (the bound of spec.rs).
    pub fn bytes_per_line(cpus: u64) -> u64 {
        4 + 8 * cpus.div_ceil(64).max(1) + 8 * cpus + std::mem::size_of::<LockHolds>() as u64
    }
}

/// Each node's port into the interconnect (SN2: the SHUB's NUMAlink
/// port), a bandwidth server: data a CPU of another node streams to or
/// from the node's memory (a page cleared remotely: each line fetched for
/// ownership, later written back) passes through it, at most
/// `link_mb_s` MB/s in each direction. One CPU's remote clear is bound by
/// its own misses' latency (`clear_remote_ns_per_kib`), far below the
/// port's rate; when many CPUs clear pages on the same node at once, the
/// port is the bottleneck and they queue: a clear ends when both its own
/// stream and the port's share of it are done.
pub struct Interconnect {
    /// Per node: the port's recent transfers, as simulated-time intervals.
    port: Vec<LockHolds>,
    /// The port's rate in MB/s (0: unlimited).
    mb_s: u64,
    /// Time CPUs spent waiting for a port beyond their own stream (ns).
    pub wait_ns: u64,
}

impl Interconnect {
    pub fn new(nodes: usize, link_mb_s: u64) -> Interconnect {
        Interconnect { port: vec![LockHolds::default(); nodes], mb_s: link_mb_s, wait_ns: 0 }
    }

    /// `bytes` streamed by `ctx.cpu` to memory on node `home`, which its
    /// CPU alone takes `own_ns` to do; charges ctx.sys.
    pub fn remote_stream(&mut self, ctx: &mut Ctx, home: usize, bytes: u64, own_ns: u64) {
        if self.mb_s == 0 || home == ctx.node {
            ctx.sys += own_ns;
            return;
        }
        let d = (bytes * 1000).div_ceil(self.mb_s);
        let t = ctx.clock();
        let s = self.port[home].acquire(ctx.now, t, d);
        let done = (t + own_ns).max(s + d);
        self.wait_ns += done - (t + own_ns);
        ctx.sys += done - t;
    }

    pub fn state_bytes(&self) -> u64 {
        (self.port.len() * std::mem::size_of::<LockHolds>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(cache_kib: u64) -> CacheModel {
        // Two nodes at distance 20, two CPUs each; line 0 homed on node 0.
        let cost: CostSpec = serde_json::from_value(serde_json::json!({
            "fault_ns": 0, "clear_ns_per_kib": 0, "clear_remote_ns_per_kib": 0, "line_miss_ns": 100,
            "line_hit_ns": 1, "buddy_page_ns": 0, "user_store_ns": 0})).unwrap();
        CacheModel::new(vec![0, 1], &[0, 0, 1, 1], &[vec![10, 20], vec![20, 10]], &cost, cache_kib, 0)
    }

    fn at(cpu: usize, now: u64) -> Ctx {
        Ctx { cpu, node: cpu / 2, now, ..Default::default() }
    }

    fn cost_of(m: &mut CacheModel, cpu: usize, now: u64, line: usize, write: bool) -> u64 {
        let mut ctx = at(cpu, now);
        if write {
            m.write(&mut ctx, line);
        } else {
            m.read(&mut ctx, line);
        }
        ctx.sys
    }

    #[test]
    fn a_line_added_past_the_room_made_keeps_every_cpus_copies() {
        // model() makes room for its two lines only: a third line lays the
        // per-CPU table out again, and what each CPU holds must survive it.
        let mut m = model(0);
        assert_eq!(cost_of(&mut m, 2, 0, 0, false), 200);
        assert_eq!(cost_of(&mut m, 1, 0, 1, true), 200);
        let l = m.add_line(1);
        assert_eq!(l, 2);
        assert_eq!(cost_of(&mut m, 2, 1000, 0, false), 1); // CPU 2 still holds line 0
        assert_eq!(cost_of(&mut m, 1, 1000, 1, true), 1); // CPU 1 still owns line 1
        assert_eq!(cost_of(&mut m, 3, 1000, 2, false), 100); // the new line: local to CPU 3
        assert_eq!(cost_of(&mut m, 3, 2000, 2, false), 1);
        assert_eq!(m.check(), Ok(3));
    }

    #[test]
    fn lines_stay_cached_until_another_cpu_writes_them() {
        let mut m = model(0);
        assert_eq!(cost_of(&mut m, 2, 0, 0, false), 200); // remote clean read
        assert_eq!(cost_of(&mut m, 2, 1000, 0, false), 1); // still cached
        assert_eq!(cost_of(&mut m, 0, 2000, 0, false), 100); // local clean read, now two sharers
        // CPU 0 writes: an upgrade (lat(0,0) = 100) and CPU 2's copy
        // invalidated: (100 + 200 + 200) / 2 = 250 bounds it.
        assert_eq!(cost_of(&mut m, 0, 3000, 0, true), 250);
        assert_eq!(m.invalidations, 1);
        assert_eq!(cost_of(&mut m, 0, 4000, 0, true), 1); // owned: a hit
        // CPU 2 reads the modified line: three hops, (200 + 100 + 200) / 2.
        assert_eq!(cost_of(&mut m, 2, 5000, 0, false), 250);
        assert_eq!(m.dirty_fetches, 1);
        // Both hold it shared now; CPU 0's next write invalidates CPU 2 again.
        assert_eq!(cost_of(&mut m, 0, 6000, 0, false), 1);
        assert_eq!(cost_of(&mut m, 0, 7000, 0, true), 250);
        assert_eq!(m.check(), Ok(2));
    }

    #[test]
    fn streamed_data_evicts_lines_and_writes_modified_ones_back() {
        let mut m = model(64);
        assert_eq!(cost_of(&mut m, 0, 0, 1, true), 200); // CPU 0 owns line 1 (homed on node 1)
        m.stream(0, 32 * 1024);
        assert_eq!(cost_of(&mut m, 0, 1000, 1, true), 1); // 32 KiB later: still there
        m.stream(0, 65 * 1024);
        // Evicted and written back: CPU 2 reads it from its home (node 1,
        // local to CPU 2) and no three-hop fetch is counted.
        assert_eq!(cost_of(&mut m, 2, 2000, 1, false), 100);
        assert_eq!(m.dirty_fetches, 0);
        assert_eq!(cost_of(&mut m, 0, 3000, 1, false), 200);
    }

    #[test]
    fn transactions_on_one_line_queue_at_its_home() {
        let mut m = model(0);
        // CPU 0 takes line 0 for writing at t=0 (100 ns); CPU 2 asks at
        // t=50 while that transaction is in flight: it waits 50 ns, then its
        // own write fetches the modified line from CPU 0 (250 ns).
        assert_eq!(cost_of(&mut m, 0, 0, 0, true), 100);
        assert_eq!(cost_of(&mut m, 2, 50, 0, true), 50 + 250);
        assert_eq!(m.queue_ns, 50);
        // A CPU asking after both have ended does not wait.
        assert_eq!(cost_of(&mut m, 1, 10_000, 0, true), 250);
        assert_eq!(m.queue_ns, 50);
    }

    #[test]
    fn remote_clears_share_the_home_port() {
        // 1000 MB/s: a 16 KiB page takes 16384 ns of the port; each CPU
        // alone takes 20000 ns to clear it.
        let mut ic = Interconnect::new(2, 1000);
        let mut a = at(2, 0);
        ic.remote_stream(&mut a, 0, 16384, 20_000);
        assert_eq!(a.sys, 20_000); // alone: its own stream bounds it
        // A second CPU starts while the port is busy until 16384: its share
        // ends at 32768, later than its own 20000 + 1000.
        let mut b = at(3, 1000);
        ic.remote_stream(&mut b, 0, 16384, 20_000);
        assert_eq!(b.sys, 32768 - 1000);
        assert_eq!(ic.wait_ns, 32768 - 21000);
        // A local clear does not use the port.
        let mut c = at(0, 1000);
        ic.remote_stream(&mut c, 0, 16384, 5_000);
        assert_eq!(c.sys, 5_000);
    }
}
