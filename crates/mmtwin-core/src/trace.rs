//! A streaming writer of ftrace text for the tracepoints the simulated
//! kernel passes.
//!
//! The output is what `cat /sys/kernel/debug/tracing/trace` printed on the
//! simulated kernel with only the chosen events enabled, so that the kernel's
//! own `Documentation/trace/postprocess/trace-vmscan-postprocess.pl` and
//! MMTests' `trace-congestion-postprocess.pl` read it unchanged.
//!
//! # Line layout
//!
//! Every event is one line: the context that `trace_print_context()` prints,
//! the event name, `": "`, then the event's `TP_printk` text.
//!
//! ```text
//! 3.0, 3.1   "%16s-%-5d [%03d] %5lu.%06lu: %s: ..."
//!            "         kswapd0-27    [001]  1234.567891: mm_vmscan_kswapd_sleep: nid=0"
//! 4.11       "%16s-%-5d [%03d] %c%c%c%c %5lu.%06lu: %s: ..."   (irq-info is on by default)
//!            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_kswapd_sleep: nid=0"
//! ```
//!
//! The comm is cut to 15 bytes (TASK_COMM_LEN - 1). The timestamp is the
//! simulated clock rounded to the nearest microsecond, as `ns2usecs()` does.
//! The four irq-info characters of 4.11 are always `....` (interrupts on,
//! no resched pending, task context, preempt count 0): the simulation has no
//! interrupt state. The file starts with the header `s_show()` prints for
//! the `nop` tracer, except 4.11's `# entries-in-buffer/entries-written`
//! line and the `#` after it, which need counts a streaming writer does not
//! have. The scripts skip every line their prefix regex does not match, so
//! the header does no harm.
//!
//! # Fields per era
//!
//! 3.0 and 3.1 print these events identically. 4.11 adds `zid` to
//! `mm_vmscan_kswapd_wake` and `classzone_idx` to
//! `mm_vmscan_direct_reclaim_begin`. It replaces the lumpy-reclaim
//! `contig_*` counters of `mm_vmscan_lru_isolate` with
//! `classzone`/`nr_skipped`/`lru`, and drops `zid` from
//! `mm_vmscan_lru_shrink_inactive` in favour of the per-node counters. The
//! fields of [`TraceRec`] are a superset; an era ignores the ones its
//! `TP_printk` does not print. 2.6.18 has none of these tracepoints.
//!
//! `gfp_flags` is always given in the engine's encoding, which has the bit
//! values of 3.0/3.1 (`crate::alloc::gfp`). It is rendered by each era's
//! `show_gfp_flags()`; for 4.11 it is first translated to 4.11's bit values
//! (see [`gfp_flags_string`]).
//!
//! Kernel quirks reproduced on purpose:
//! * `__print_flags()` matches table entries in order, each one taking the
//!   bits it covers. Any bits left over are printed as `0x..`.
//! * In 3.x, `__GFP_NOTRACK` is 0 unless CONFIG_KMEMCHECK is set (we assume
//!   it is not), and a zero mask always matches. So the name `GFP_NOTRACK`
//!   appears whenever bits not named in the table (DMA, DMA32, HIGHMEM
//!   alone, FS alone) reach that entry, e.g.
//!   `GFP_KERNEL|GFP_NOTRACK|0x4` for `GFP_KERNEL|__GFP_DMA32`.
//! * `page=%p` of `mm_vmscan_writepage` is the struct page address under
//!   x86_64's unrandomised vmemmap (`0xffffea0000000000`). A struct page is
//!   56 bytes in 3.0/3.1 and 64 bytes in 4.11.
//!
//! # What the post-processing scripts parse
//!
//! Each script matches every line against one prefix regex and skips
//! lines that fail it. Then, by event name, it matches the rest of the line
//! against a field regex that is not anchored. The script builds that regex
//! from `/sys/kernel/debug/tracing/events/<sys>/<event>/format` when it can
//! read that file (the *host's* format!), and otherwise uses its built-in
//! default. Prefix regexes:
//!
//! ```text
//! 3.0-3.2 vmscan script, MMTests trace-congestion-postprocess.pl (2011):
//!   \s*([a-zA-Z0-9-]*)\s*(\[[0-9]*\])\s*([0-9.]*):\s*([a-zA-Z_]*):\s*(.*)
//! 4.11 and later vmscan script (irq-info optional):
//!   \s*([a-zA-Z0-9-]*)\s*(\[[0-9]*\])(\s*[dX.][Nnp.][Hhs.][0-9a-fA-F.]*|)\s*([0-9.]*):\s*([a-zA-Z_]*):\s*(.*)
//! ```
//!
//! So a comm should be made of `[A-Za-z0-9-]`. The old prefix regex does
//! not accept 4.11's irq-info column, so only 3.0/3.1 output feeds the
//! 2011 congestion script.
//!
//! * 3.0's `trace-vmscan-postprocess.pl` parses every 3.0/3.1 line.
//! * 4.11's copy expects the irq-info column and 4.11's fields. It still
//!   fails on 4.11's own `mm_vmscan_kswapd_wake` (`zid=` is in the way) and
//!   `mm_vmscan_lru_isolate` (it looks for `classzone_idx=`, but the kernel
//!   prints `classzone=`). That is a bug of the script, not of this writer.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};

use crate::spec::{Era, SpecError};

/// A tracepoint the simulated kernel can pass.
///
/// There is no zone_reclaim tracepoint in any simulated era: mainline
/// never had `mm_vmscan_zone_reclaim_begin`; 4.x has node_reclaim
/// tracepoints only from 4.13 on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u8)]
pub enum Tp {
    MmVmscanKswapdSleep,
    MmVmscanKswapdWake,
    MmVmscanWakeupKswapd,
    MmVmscanDirectReclaimBegin,
    MmVmscanDirectReclaimEnd,
    MmVmscanLruIsolate,
    MmVmscanWritepage,
    MmVmscanLruShrinkInactive,
    WritebackCongestionWait,
    WritebackWaitIffCongested,
}

impl Tp {
    /// Every tracepoint, in declaration order.
    pub const ALL: [Tp; 10] = [
        Tp::MmVmscanKswapdSleep,
        Tp::MmVmscanKswapdWake,
        Tp::MmVmscanWakeupKswapd,
        Tp::MmVmscanDirectReclaimBegin,
        Tp::MmVmscanDirectReclaimEnd,
        Tp::MmVmscanLruIsolate,
        Tp::MmVmscanWritepage,
        Tp::MmVmscanLruShrinkInactive,
        Tp::WritebackCongestionWait,
        Tp::WritebackWaitIffCongested,
    ];

    /// The event name, as in `events/<system>/<name>` and in the trace.
    pub fn name(self) -> &'static str {
        match self {
            Tp::MmVmscanKswapdSleep => "mm_vmscan_kswapd_sleep",
            Tp::MmVmscanKswapdWake => "mm_vmscan_kswapd_wake",
            Tp::MmVmscanWakeupKswapd => "mm_vmscan_wakeup_kswapd",
            Tp::MmVmscanDirectReclaimBegin => "mm_vmscan_direct_reclaim_begin",
            Tp::MmVmscanDirectReclaimEnd => "mm_vmscan_direct_reclaim_end",
            Tp::MmVmscanLruIsolate => "mm_vmscan_lru_isolate",
            Tp::MmVmscanWritepage => "mm_vmscan_writepage",
            Tp::MmVmscanLruShrinkInactive => "mm_vmscan_lru_shrink_inactive",
            Tp::WritebackCongestionWait => "writeback_congestion_wait",
            Tp::WritebackWaitIffCongested => "writeback_wait_iff_congested",
        }
    }

    /// The trace system (the directory under `events/`).
    pub fn system(self) -> &'static str {
        match self {
            Tp::WritebackCongestionWait | Tp::WritebackWaitIffCongested => "writeback",
            _ => "vmscan",
        }
    }

    /// Whether the era's kernel has this tracepoint. The vmscan events
    /// arrived in 2.6.36 and the congestion events in 2.6.37; all exist in
    /// 3.0, 3.1 and 4.11.
    pub fn exists_in(self, era: Era) -> bool {
        !matches!(era, Era::V2618)
    }

    /// Look an event up by name: `mm_vmscan_kswapd_wake`, or with its
    /// system as perf and trace-cmd write it (`vmscan:mm_vmscan_kswapd_wake`)
    /// or as the tracefs path does (`vmscan/mm_vmscan_kswapd_wake`).
    pub fn from_name(name: &str) -> Option<Tp> {
        Tp::ALL.iter().copied().find(|tp| {
            let n = tp.name();
            name == n
                || name
                    .strip_prefix(tp.system())
                    .and_then(|rest| rest.strip_prefix([':', '/']))
                    .is_some_and(|rest| rest == n)
        })
    }

    #[inline]
    fn bit(self) -> u16 {
        1 << self as u8
    }
}

/// `isolate_mode` as each era's kernel passes it to `mm_vmscan_lru_isolate`
/// (printed with `%d`).
pub mod isolate {
    /// 3.0/3.1 (include/linux/swap.h): isolate inactive pages only.
    pub const V3_INACTIVE: u32 = 0;
    /// 3.0/3.1: isolate active pages only (shrink_active_list).
    pub const V3_ACTIVE: u32 = 1;
    /// 3.0/3.1: both, for lumpy reclaim.
    pub const V3_BOTH: u32 = 2;
    /// 4.11 (include/linux/mmzone.h, a bit mask): 0 for ordinary reclaim,
    /// with this bit when the scan may not unmap pages.
    pub const V411_UNMAPPED: u32 = 0x2;
}

/// LRU list indices (`enum lru_list`), which 4.11 prints as `lru=` names.
pub mod lru {
    pub const INACTIVE_ANON: u32 = 0;
    pub const ACTIVE_ANON: u32 = 1;
    pub const INACTIVE_FILE: u32 = 2;
    pub const ACTIVE_FILE: u32 = 3;
    pub const UNEVICTABLE: u32 = 4;
}

/// One event's arguments. Each variant carries the union of the fields the
/// simulated eras print; an era ignores the fields its `TP_printk` lacks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceRec {
    /// kswapd goes to sleep (kswapd's context).
    KswapdSleep { nid: u32 },
    /// kswapd wakes to balance the node (kswapd's context). `zid` is the
    /// classzone index; 4.11 only.
    KswapdWake { nid: u32, zid: u32, order: u32 },
    /// An allocation wakes kswapd (the allocating task's context).
    WakeupKswapd { nid: u32, zid: u32, order: u32 },
    /// Direct reclaim starts. `gfp_flags` is in the engine's (3.x) bit
    /// encoding; `classzone_idx` is printed by 4.11 only.
    DirectReclaimBegin { order: u32, may_writepage: bool, gfp_flags: u32, classzone_idx: u32 },
    /// Direct reclaim ends.
    DirectReclaimEnd { nr_reclaimed: u64 },
    /// Pages are taken off an LRU list. 3.x prints the `contig_*` (lumpy
    /// reclaim) counters; 4.11 prints `classzone_idx` (as `classzone=`),
    /// `nr_skipped` and `lru` (see [`lru`]). `isolate_mode` is the era's raw
    /// value (see [`isolate`]).
    LruIsolate {
        isolate_mode: u32,
        classzone_idx: u32,
        order: u32,
        nr_requested: u64,
        nr_scanned: u64,
        nr_skipped: u64,
        nr_taken: u64,
        contig_taken: u64,
        contig_dirty: u64,
        contig_failed: u64,
        lru: u32,
    },
    /// Reclaim writes a page out. `sync` (synchronous lumpy reclaim) only
    /// exists in 3.x; 4.11 always reports RECLAIM_WB_ASYNC.
    Writepage { pfn: u64, file: bool, sync: bool },
    /// shrink_inactive_list finishes. 3.x prints `zid` and derives the
    /// flags from `file` and `sync` (sync lumpy reclaim prints
    /// `RECLAIM_WB_MIXED|RECLAIM_WB_SYNC`); 4.11 prints the per-node
    /// counters and `file` as ANON/FILE with ASYNC. `anon` is accepted for
    /// symmetry and ignored: every kernel derives ANON from `!file`.
    LruShrinkInactive {
        nid: u32,
        zid: u32,
        nr_scanned: u64,
        nr_reclaimed: u64,
        priority: i32,
        file: bool,
        anon: bool,
        sync: bool,
        nr_dirty: u64,
        nr_writeback: u64,
        nr_congested: u64,
        nr_immediate: u64,
        nr_activate: u64,
        nr_ref_keep: u64,
        nr_unmap_fail: u64,
    },
    /// congestion_wait() returns; both times in microseconds (the kernel's
    /// fields are `unsigned int`).
    CongestionWait { usec_timeout: u64, usec_delayed: u64 },
    /// wait_iff_congested() returns.
    WaitIffCongested { usec_timeout: u64, usec_delayed: u64 },
}

impl TraceRec {
    /// The tracepoint this record belongs to.
    pub fn tp(&self) -> Tp {
        match self {
            TraceRec::KswapdSleep { .. } => Tp::MmVmscanKswapdSleep,
            TraceRec::KswapdWake { .. } => Tp::MmVmscanKswapdWake,
            TraceRec::WakeupKswapd { .. } => Tp::MmVmscanWakeupKswapd,
            TraceRec::DirectReclaimBegin { .. } => Tp::MmVmscanDirectReclaimBegin,
            TraceRec::DirectReclaimEnd { .. } => Tp::MmVmscanDirectReclaimEnd,
            TraceRec::LruIsolate { .. } => Tp::MmVmscanLruIsolate,
            TraceRec::Writepage { .. } => Tp::MmVmscanWritepage,
            TraceRec::LruShrinkInactive { .. } => Tp::MmVmscanLruShrinkInactive,
            TraceRec::CongestionWait { .. } => Tp::WritebackCongestionWait,
            TraceRec::WaitIffCongested { .. } => Tp::WritebackWaitIffCongested,
        }
    }
}

/// Writes enabled events to a file as ftrace text. `Tracer::disabled()`
/// writes nothing and its [`on`](Tracer::on) is always false.
#[derive(Debug)]
pub struct Tracer {
    out: Option<BufWriter<File>>,
    /// Bit `tp as u8` set for every enabled tracepoint.
    mask: u16,
    era: Era,
    path: String,
    /// The line being formatted; reused so that emitting does not allocate.
    line: String,
    lines: u64,
    /// The first I/O error; once set, nothing more is written.
    error: Option<String>,
}

impl Tracer {
    /// A tracer with every event off.
    pub fn disabled() -> Tracer {
        Tracer { out: None, mask: 0, era: Era::V30, path: String::new(), line: String::new(), lines: 0, error: None }
    }

    /// Create (truncate) `path` and trace the named `events` to it, or
    /// every event of the era when `events` is `None`. Names are checked
    /// before the file is touched. An unknown name is an error at
    /// `trace.events[i]`, and so is a name the era's kernel lacks (every
    /// name in 2.6.18). Tracing 2.6.18 with no list is an error at
    /// `trace`. A file that cannot be created is an error at `trace.path`.
    pub fn to_file(path: &str, events: Option<&[String]>, era: Era) -> Result<Tracer, SpecError> {
        let mask = event_mask(events, era)?;
        let file =
            File::create(path).map_err(|e| SpecError::new("trace.path", format!("cannot create {path:?}: {e}")))?;
        let mut tracer = Tracer {
            out: Some(BufWriter::with_capacity(1 << 16, file)),
            mask,
            era,
            path: path.to_string(),
            line: String::with_capacity(256),
            lines: 0,
            error: None,
        };
        tracer.write_raw(header(era));
        Ok(tracer)
    }

    /// Whether `tp` is traced: check this before building a record.
    #[inline]
    pub fn on(&self, tp: Tp) -> bool {
        self.mask & tp.bit() != 0
    }

    /// The era whose formats are written.
    pub fn era(&self) -> Era {
        self.era
    }

    /// Write one event line, if its tracepoint is on. `now_ns` is the
    /// simulated clock; `comm`, `pid` and `cpu` are the context the
    /// tracepoint fires in (kswapd's own for kswapd_wake/sleep, the
    /// allocating task's for wakeup_kswapd and direct reclaim).
    pub fn emit(&mut self, now_ns: u64, comm: &str, pid: u32, cpu: u32, rec: &TraceRec) {
        let tp = rec.tp();
        if !self.on(tp) || self.error.is_some() {
            return;
        }
        let line = &mut self.line;
        line.clear();
        write_context(line, self.era, now_ns, comm, pid, cpu);
        line.push_str(tp.name());
        line.push_str(": ");
        write_fields(line, self.era, rec);
        line.push('\n');
        let Some(out) = self.out.as_mut() else { return };
        match out.write_all(line.as_bytes()) {
            Ok(()) => self.lines += 1,
            Err(e) => self.error = Some(format!("cannot write {:?}: {e}", self.path)),
        }
    }

    /// Flush the file and return how many event lines were written (the
    /// header is not counted). An I/O error met while writing or flushing
    /// is reported here, at `trace.path`.
    pub fn finish(&mut self) -> Result<u64, SpecError> {
        if self.error.is_none() {
            if let Some(out) = self.out.as_mut() {
                if let Err(e) = out.flush() {
                    self.error = Some(format!("cannot write {:?}: {e}", self.path));
                }
            }
        }
        match &self.error {
            Some(msg) => Err(SpecError::new("trace.path", msg.clone())),
            None => Ok(self.lines),
        }
    }

    fn write_raw(&mut self, text: &str) {
        if self.error.is_some() {
            return;
        }
        if let Some(out) = self.out.as_mut() {
            if let Err(e) = out.write_all(text.as_bytes()) {
                self.error = Some(format!("cannot write {:?}: {e}", self.path));
            }
        }
    }
}

/// The enabled-event mask for `events` in `era`, or the error naming the
/// offending entry.
fn event_mask(events: Option<&[String]>, era: Era) -> Result<u16, SpecError> {
    let Some(names) = events else {
        if era == Era::V2618 {
            return Err(SpecError::new(
                "trace",
                "kernel 2.6.18 has no tracepoints to trace: the vmscan events arrived in 2.6.36 \
                 and the writeback congestion events in 2.6.37",
            ));
        }
        return Ok(Tp::ALL.iter().filter(|tp| tp.exists_in(era)).fold(0, |m, tp| m | tp.bit()));
    };
    if era == Era::V2618 && names.is_empty() {
        return Err(SpecError::new("trace.events", "kernel 2.6.18 has no tracepoints to trace"));
    }
    let mut mask = 0;
    for (i, name) in names.iter().enumerate() {
        let field = format!("trace.events[{i}]");
        let tp = Tp::from_name(name)
            .ok_or_else(|| SpecError::new(&field, format!("{name:?} is not a traced event; {}", allowed_names(era))))?;
        if !tp.exists_in(era) {
            return Err(SpecError::new(
                &field,
                format!("{name:?} does not exist in kernel {}; {}", era.name(), allowed_names(era)),
            ));
        }
        mask |= tp.bit();
    }
    Ok(mask)
}

fn allowed_names(era: Era) -> String {
    let names: Vec<&str> = Tp::ALL.iter().filter(|tp| tp.exists_in(era)).map(|tp| tp.name()).collect();
    if names.is_empty() {
        format!(
            "kernel {} has no tracepoints (vmscan events arrived in 2.6.36, writeback congestion events in 2.6.37)",
            era.name()
        )
    } else {
        format!("allowed in kernel {}: {}", era.name(), names.join(", "))
    }
}

/// The header `s_show()` prints before the first event for the nop tracer.
fn header(era: Era) -> &'static str {
    match era {
        Era::V411 => concat!(
            "# tracer: nop\n",
            "#\n",
            "#                              _-----=> irqs-off\n",
            "#                             / _----=> need-resched\n",
            "#                            | / _---=> hardirq/softirq\n",
            "#                            || / _--=> preempt-depth\n",
            "#                            ||| /     delay\n",
            "#           TASK-PID   CPU#  ||||    TIMESTAMP  FUNCTION\n",
            "#              | |       |   ||||       |         |\n",
        ),
        _ => concat!(
            "# tracer: nop\n",
            "#\n",
            "#           TASK-PID    CPU#    TIMESTAMP  FUNCTION\n",
            "#              | |       |          |         |\n",
        ),
    }
}

/// The comm as the kernel keeps it: at most TASK_COMM_LEN - 1 = 15 bytes.
fn kernel_comm(comm: &str) -> &str {
    if comm.len() <= 15 {
        return comm;
    }
    let mut end = 15;
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    &comm[..end]
}

/// `trace_print_context()`: task, pid, cpu, (4.11: irq-info), timestamp.
fn write_context(line: &mut String, era: Era, now_ns: u64, comm: &str, pid: u32, cpu: u32) {
    // ns2usecs() rounds to the nearest microsecond.
    let usecs = now_ns / 1000 + u64::from(now_ns % 1000 >= 500);
    let (secs, usec_rem) = (usecs / 1_000_000, usecs % 1_000_000);
    let _ = write!(line, "{:>16}-{:<5} [{:03}] ", kernel_comm(comm), pid, cpu);
    if era == Era::V411 {
        line.push_str(".... ");
    }
    let _ = write!(line, "{secs:>5}.{usec_rem:06}: ");
}

/// Each era's `TP_printk` for the record.
fn write_fields(line: &mut String, era: Era, rec: &TraceRec) {
    let v4 = era == Era::V411;
    // Integers are printed through the C type of the kernel's field
    // (`%d`/`%ld` are signed, `%u` is unsigned int).
    let _ = match *rec {
        TraceRec::KswapdSleep { nid } => write!(line, "nid={}", nid as i32),
        TraceRec::KswapdWake { nid, zid, order } => {
            if v4 {
                write!(line, "nid={} zid={} order={}", nid as i32, zid as i32, order as i32)
            } else {
                write!(line, "nid={} order={}", nid as i32, order as i32)
            }
        }
        TraceRec::WakeupKswapd { nid, zid, order } => {
            write!(line, "nid={} zid={} order={}", nid as i32, zid as i32, order as i32)
        }
        TraceRec::DirectReclaimBegin { order, may_writepage, gfp_flags, classzone_idx } => {
            let _ = write!(line, "order={} may_writepage={} gfp_flags=", order as i32, i32::from(may_writepage));
            write_gfp_flags(line, era, gfp_flags);
            if v4 {
                write!(line, " classzone_idx={}", classzone_idx as i32)
            } else {
                Ok(())
            }
        }
        TraceRec::DirectReclaimEnd { nr_reclaimed } => write!(line, "nr_reclaimed={nr_reclaimed}"),
        TraceRec::LruIsolate {
            isolate_mode,
            classzone_idx,
            order,
            nr_requested,
            nr_scanned,
            nr_skipped,
            nr_taken,
            contig_taken,
            contig_dirty,
            contig_failed,
            lru,
        } => {
            if v4 {
                let _ = write!(
                    line,
                    "isolate_mode={} classzone={} order={} nr_requested={nr_requested} nr_scanned={nr_scanned} \
                     nr_skipped={nr_skipped} nr_taken={nr_taken} lru=",
                    isolate_mode as i32, classzone_idx as i32, order as i32
                );
                match LRU_NAMES.get(lru as usize) {
                    Some(name) => {
                        line.push_str(name);
                        Ok(())
                    }
                    None => write!(line, "{:#x}", lru),
                }
            } else {
                write!(
                    line,
                    "isolate_mode={} order={} nr_requested={nr_requested} nr_scanned={nr_scanned} \
                     nr_taken={nr_taken} contig_taken={contig_taken} contig_dirty={contig_dirty} \
                     contig_failed={contig_failed}",
                    isolate_mode as i32, order as i32
                )
            }
        }
        TraceRec::Writepage { pfn, file, sync } => {
            let page_size = if v4 { 64 } else { 56 };
            let page = VMEMMAP_START.wrapping_add(pfn.wrapping_mul(page_size));
            let _ = write!(line, "page={page:016x} pfn={pfn} flags=");
            let kind = if file { RECLAIM_WB_FILE } else { RECLAIM_WB_ANON };
            let io = if sync && !v4 { RECLAIM_WB_SYNC } else { RECLAIM_WB_ASYNC };
            write_reclaim_flags(line, kind | io);
            Ok(())
        }
        TraceRec::LruShrinkInactive {
            nid,
            zid,
            nr_scanned,
            nr_reclaimed,
            priority,
            file,
            anon: _,
            sync,
            nr_dirty,
            nr_writeback,
            nr_congested,
            nr_immediate,
            nr_activate,
            nr_ref_keep,
            nr_unmap_fail,
        } => {
            let kind = if file { RECLAIM_WB_FILE } else { RECLAIM_WB_ANON };
            let flags = if v4 {
                let _ = write!(
                    line,
                    "nid={} nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} nr_congested={} \
                     nr_immediate={} nr_activate={} nr_ref_keep={} nr_unmap_fail={} priority={priority} flags=",
                    nid as i32,
                    nr_scanned as i64,
                    nr_reclaimed as i64,
                    nr_dirty as i64,
                    nr_writeback as i64,
                    nr_congested as i64,
                    nr_immediate as i64,
                    nr_activate as i64,
                    nr_ref_keep as i64,
                    nr_unmap_fail as i64
                );
                kind | RECLAIM_WB_ASYNC
            } else {
                let _ = write!(
                    line,
                    "nid={} zid={} nr_scanned={} nr_reclaimed={} priority={priority} flags=",
                    nid as i32, zid as i32, nr_scanned as i64, nr_reclaimed as i64
                );
                // trace_shrink_flags(): sync lumpy reclaim reports MIXED.
                if sync {
                    RECLAIM_WB_MIXED | RECLAIM_WB_SYNC
                } else {
                    kind | RECLAIM_WB_ASYNC
                }
            };
            write_reclaim_flags(line, flags);
            Ok(())
        }
        TraceRec::CongestionWait { usec_timeout, usec_delayed }
        | TraceRec::WaitIffCongested { usec_timeout, usec_delayed } => {
            write!(line, "usec_timeout={} usec_delayed={}", usec_timeout as u32, usec_delayed as u32)
        }
    };
}

/// x86_64's vmemmap base (without CONFIG_RANDOMIZE_MEMORY).
const VMEMMAP_START: u64 = 0xffff_ea00_0000_0000;

/// `LRU_NAMES` of 4.11's include/trace/events/mmflags.h, by `enum lru_list`.
const LRU_NAMES: [&str; 5] = ["inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable"];

const RECLAIM_WB_ANON: u64 = 0x0001;
const RECLAIM_WB_FILE: u64 = 0x0002;
const RECLAIM_WB_MIXED: u64 = 0x0010;
const RECLAIM_WB_SYNC: u64 = 0x0004;
const RECLAIM_WB_ASYNC: u64 = 0x0008;

/// show_reclaim_flags(), the same in every era.
const RECLAIM_FLAG_NAMES: [(u64, &str); 5] = [
    (RECLAIM_WB_ANON, "RECLAIM_WB_ANON"),
    (RECLAIM_WB_FILE, "RECLAIM_WB_FILE"),
    (RECLAIM_WB_MIXED, "RECLAIM_WB_MIXED"),
    (RECLAIM_WB_SYNC, "RECLAIM_WB_SYNC"),
    (RECLAIM_WB_ASYNC, "RECLAIM_WB_ASYNC"),
];

fn write_reclaim_flags(line: &mut String, flags: u64) {
    if flags == 0 {
        line.push_str("RECLAIM_WB_NONE");
    } else {
        print_flags(line, flags, &RECLAIM_FLAG_NAMES);
    }
}

/// `__print_flags()` (ftrace_print_flags_seq): in table order, every entry
/// whose mask is wholly set is printed and its bits cleared; leftover bits
/// follow as hex. A zero mask matches while any bit is left.
fn print_flags(line: &mut String, flags: u64, table: &[(u64, &str)]) {
    let mut rest = flags;
    let mut first = true;
    for &(mask, name) in table {
        if rest == 0 {
            break;
        }
        if rest & mask != mask {
            continue;
        }
        rest &= !mask;
        if !first {
            line.push('|');
        }
        first = false;
        line.push_str(name);
    }
    if rest != 0 {
        if !first {
            line.push('|');
        }
        let _ = write!(line, "{rest:#x}");
    }
}

/// GFP bits of 3.0/3.1 (include/linux/gfp.h); also the engine's encoding.
mod gfp3 {
    pub const DMA: u64 = 0x01;
    pub const HIGHMEM: u64 = 0x02;
    pub const DMA32: u64 = 0x04;
    pub const MOVABLE: u64 = 0x08;
    pub const WAIT: u64 = 0x10;
    pub const HIGH: u64 = 0x20;
    pub const IO: u64 = 0x40;
    pub const FS: u64 = 0x80;
    pub const COLD: u64 = 0x100;
    pub const NOWARN: u64 = 0x200;
    pub const REPEAT: u64 = 0x400;
    pub const NOFAIL: u64 = 0x800;
    pub const NORETRY: u64 = 0x1000;
    pub const COMP: u64 = 0x4000;
    pub const ZERO: u64 = 0x8000;
    pub const NOMEMALLOC: u64 = 0x10000;
    pub const HARDWALL: u64 = 0x20000;
    pub const THISNODE: u64 = 0x40000;
    pub const RECLAIMABLE: u64 = 0x80000;
    /// 0x200000 with CONFIG_KMEMCHECK, 0 without (assumed).
    pub const NOTRACK: u64 = 0;
    pub const NO_KSWAPD: u64 = 0x400000;
    pub const OTHER_NODE: u64 = 0x800000;

    pub const KERNEL: u64 = WAIT | IO | FS;
    pub const USER: u64 = KERNEL | HARDWALL;
    pub const HIGHUSER: u64 = USER | HIGHMEM;
    pub const HIGHUSER_MOVABLE: u64 = HIGHUSER | MOVABLE;
    pub const TRANSHUGE: u64 = HIGHUSER_MOVABLE | COMP | NOMEMALLOC | NORETRY | NOWARN | NO_KSWAPD;
    pub const TEMPORARY: u64 = KERNEL | RECLAIMABLE;
    pub const NOFS: u64 = WAIT | IO;
    pub const ATOMIC: u64 = HIGH;
    pub const NOIO: u64 = WAIT;
}

/// show_gfp_flags() of 3.0/3.1 (include/trace/events/gfpflags.h).
const GFP_NAMES_V3: &[(u64, &str)] = &[
    (gfp3::TRANSHUGE, "GFP_TRANSHUGE"),
    (gfp3::HIGHUSER_MOVABLE, "GFP_HIGHUSER_MOVABLE"),
    (gfp3::HIGHUSER, "GFP_HIGHUSER"),
    (gfp3::USER, "GFP_USER"),
    (gfp3::TEMPORARY, "GFP_TEMPORARY"),
    (gfp3::KERNEL, "GFP_KERNEL"),
    (gfp3::NOFS, "GFP_NOFS"),
    (gfp3::ATOMIC, "GFP_ATOMIC"),
    (gfp3::NOIO, "GFP_NOIO"),
    (gfp3::HIGH, "GFP_HIGH"),
    (gfp3::WAIT, "GFP_WAIT"),
    (gfp3::IO, "GFP_IO"),
    (gfp3::COLD, "GFP_COLD"),
    (gfp3::NOWARN, "GFP_NOWARN"),
    (gfp3::REPEAT, "GFP_REPEAT"),
    (gfp3::NOFAIL, "GFP_NOFAIL"),
    (gfp3::NORETRY, "GFP_NORETRY"),
    (gfp3::COMP, "GFP_COMP"),
    (gfp3::ZERO, "GFP_ZERO"),
    (gfp3::NOMEMALLOC, "GFP_NOMEMALLOC"),
    (gfp3::HARDWALL, "GFP_HARDWALL"),
    (gfp3::THISNODE, "GFP_THISNODE"),
    (gfp3::RECLAIMABLE, "GFP_RECLAIMABLE"),
    (gfp3::MOVABLE, "GFP_MOVABLE"),
    (gfp3::NOTRACK, "GFP_NOTRACK"),
    (gfp3::NO_KSWAPD, "GFP_NO_KSWAPD"),
    (gfp3::OTHER_NODE, "GFP_OTHER_NODE"),
];

/// GFP bits of 4.11 (include/linux/gfp.h).
mod gfp4 {
    pub const DMA: u64 = 0x01;
    pub const HIGHMEM: u64 = 0x02;
    pub const DMA32: u64 = 0x04;
    pub const MOVABLE: u64 = 0x08;
    pub const RECLAIMABLE: u64 = 0x10;
    pub const HIGH: u64 = 0x20;
    pub const IO: u64 = 0x40;
    pub const FS: u64 = 0x80;
    pub const COLD: u64 = 0x100;
    pub const NOWARN: u64 = 0x200;
    pub const REPEAT: u64 = 0x400;
    pub const NOFAIL: u64 = 0x800;
    pub const NORETRY: u64 = 0x1000;
    pub const MEMALLOC: u64 = 0x2000;
    pub const COMP: u64 = 0x4000;
    pub const ZERO: u64 = 0x8000;
    pub const NOMEMALLOC: u64 = 0x10000;
    pub const HARDWALL: u64 = 0x20000;
    pub const THISNODE: u64 = 0x40000;
    pub const ATOMIC: u64 = 0x80000;
    pub const ACCOUNT: u64 = 0x100000;
    pub const NOTRACK: u64 = 0x200000;
    pub const DIRECT_RECLAIM: u64 = 0x400000;
    pub const WRITE: u64 = 0x800000;
    pub const KSWAPD_RECLAIM: u64 = 0x1000000;
    pub const RECLAIM: u64 = DIRECT_RECLAIM | KSWAPD_RECLAIM;

    pub const KERNEL: u64 = RECLAIM | IO | FS;
    pub const KERNEL_ACCOUNT: u64 = KERNEL | ACCOUNT;
    pub const GFP_ATOMIC: u64 = HIGH | ATOMIC | KSWAPD_RECLAIM;
    pub const NOWAIT: u64 = KSWAPD_RECLAIM;
    pub const NOIO: u64 = RECLAIM;
    pub const NOFS: u64 = RECLAIM | IO;
    pub const TEMPORARY: u64 = RECLAIM | IO | FS | RECLAIMABLE;
    pub const USER: u64 = RECLAIM | IO | FS | HARDWALL;
    pub const HIGHUSER: u64 = USER | HIGHMEM;
    pub const HIGHUSER_MOVABLE: u64 = HIGHUSER | MOVABLE;
    pub const TRANSHUGE_LIGHT: u64 = (HIGHUSER_MOVABLE | COMP | NOMEMALLOC | NOWARN) & !RECLAIM;
    pub const TRANSHUGE: u64 = TRANSHUGE_LIGHT | DIRECT_RECLAIM;
}

/// show_gfp_flags() of 4.11 (`__def_gfpflag_names`,
/// include/trace/events/mmflags.h).
const GFP_NAMES_V411: &[(u64, &str)] = &[
    (gfp4::TRANSHUGE, "GFP_TRANSHUGE"),
    (gfp4::TRANSHUGE_LIGHT, "GFP_TRANSHUGE_LIGHT"),
    (gfp4::HIGHUSER_MOVABLE, "GFP_HIGHUSER_MOVABLE"),
    (gfp4::HIGHUSER, "GFP_HIGHUSER"),
    (gfp4::USER, "GFP_USER"),
    (gfp4::TEMPORARY, "GFP_TEMPORARY"),
    (gfp4::KERNEL_ACCOUNT, "GFP_KERNEL_ACCOUNT"),
    (gfp4::KERNEL, "GFP_KERNEL"),
    (gfp4::NOFS, "GFP_NOFS"),
    (gfp4::GFP_ATOMIC, "GFP_ATOMIC"),
    (gfp4::NOIO, "GFP_NOIO"),
    (gfp4::NOWAIT, "GFP_NOWAIT"),
    (gfp4::DMA, "GFP_DMA"),
    (gfp4::HIGHMEM, "__GFP_HIGHMEM"),
    (gfp4::DMA32, "GFP_DMA32"),
    (gfp4::HIGH, "__GFP_HIGH"),
    (gfp4::ATOMIC, "__GFP_ATOMIC"),
    (gfp4::IO, "__GFP_IO"),
    (gfp4::FS, "__GFP_FS"),
    (gfp4::COLD, "__GFP_COLD"),
    (gfp4::NOWARN, "__GFP_NOWARN"),
    (gfp4::REPEAT, "__GFP_REPEAT"),
    (gfp4::NOFAIL, "__GFP_NOFAIL"),
    (gfp4::NORETRY, "__GFP_NORETRY"),
    (gfp4::COMP, "__GFP_COMP"),
    (gfp4::ZERO, "__GFP_ZERO"),
    (gfp4::NOMEMALLOC, "__GFP_NOMEMALLOC"),
    (gfp4::MEMALLOC, "__GFP_MEMALLOC"),
    (gfp4::HARDWALL, "__GFP_HARDWALL"),
    (gfp4::THISNODE, "__GFP_THISNODE"),
    (gfp4::RECLAIMABLE, "__GFP_RECLAIMABLE"),
    (gfp4::MOVABLE, "__GFP_MOVABLE"),
    (gfp4::ACCOUNT, "__GFP_ACCOUNT"),
    (gfp4::NOTRACK, "__GFP_NOTRACK"),
    (gfp4::WRITE, "__GFP_WRITE"),
    (gfp4::RECLAIM, "__GFP_RECLAIM"),
    (gfp4::DIRECT_RECLAIM, "__GFP_DIRECT_RECLAIM"),
    (gfp4::KSWAPD_RECLAIM, "__GFP_KSWAPD_RECLAIM"),
];

/// Translate a 3.x gfp mask (the engine's encoding) to what the same
/// request carries in 4.11. Bits at the same position are kept;
/// `__GFP_RECLAIMABLE` moves. `__GFP_WAIT` becomes `__GFP_RECLAIM` (direct
/// and kswapd reclaim). A request without it may still wake kswapd, as every
/// 3.x request did unless `__GFP_NO_KSWAPD`, so it gets
/// `__GFP_KSWAPD_RECLAIM`. It also gets `__GFP_ATOMIC` when it has
/// `__GFP_HIGH` (3.x GFP_ATOMIC becomes 4.11 GFP_ATOMIC, and GFP_NOWAIT
/// stays GFP_NOWAIT). `__GFP_OTHER_NODE` and unknown bits are dropped.
fn gfp_to_v411(g3: u64) -> u64 {
    const SAME: u64 = gfp3::DMA
        | gfp3::HIGHMEM
        | gfp3::DMA32
        | gfp3::MOVABLE
        | gfp3::HIGH
        | gfp3::IO
        | gfp3::FS
        | gfp3::COLD
        | gfp3::NOWARN
        | gfp3::REPEAT
        | gfp3::NOFAIL
        | gfp3::NORETRY
        | gfp3::COMP
        | gfp3::ZERO
        | gfp3::NOMEMALLOC
        | gfp3::HARDWALL
        | gfp3::THISNODE
        | 0x200000; // __GFP_NOTRACK when set (CONFIG_KMEMCHECK)
    let mut g4 = g3 & SAME;
    if g3 & gfp3::RECLAIMABLE != 0 {
        g4 |= gfp4::RECLAIMABLE;
    }
    if g3 & gfp3::WAIT != 0 {
        g4 |= gfp4::RECLAIM;
    } else {
        g4 |= gfp4::KSWAPD_RECLAIM;
        if g3 & gfp3::HIGH != 0 {
            g4 |= gfp4::ATOMIC;
        }
    }
    if g3 & gfp3::NO_KSWAPD != 0 {
        g4 &= !gfp4::KSWAPD_RECLAIM;
    }
    g4
}

/// Append show_gfp_flags() of `era` for `gfp` (engine encoding, 3.x bits).
fn write_gfp_flags(line: &mut String, era: Era, gfp: u32) {
    let gfp = u64::from(gfp);
    match era {
        Era::V411 => {
            let g4 = gfp_to_v411(gfp);
            if g4 == 0 {
                line.push_str("none");
            } else {
                print_flags(line, g4, GFP_NAMES_V411);
            }
        }
        _ => {
            if gfp == 0 {
                line.push_str("GFP_NOWAIT");
            } else {
                print_flags(line, gfp, GFP_NAMES_V3);
            }
        }
    }
}

/// show_gfp_flags() of `era` for a gfp mask in the engine's (3.x) encoding,
/// e.g. `GFP_HIGHUSER_MOVABLE` or `GFP_KERNEL|GFP_NOTRACK|0x4` (3.x,
/// GFP_KERNEL|__GFP_DMA32) and `GFP_KERNEL|GFP_DMA32` (4.11).
pub fn gfp_flags_string(era: Era, gfp: u32) -> String {
    let mut s = String::new();
    write_gfp_flags(&mut s, era, gfp);
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alloc::gfp;

    /// 1234.567891 s after boot (the 499 ns round down).
    const T: u64 = 1_234_567_891_499;

    fn line(era: Era, comm: &str, pid: u32, cpu: u32, rec: &TraceRec) -> String {
        let mut s = String::new();
        write_context(&mut s, era, T, comm, pid, cpu);
        s.push_str(rec.tp().name());
        s.push_str(": ");
        write_fields(&mut s, era, rec);
        s
    }

    fn samples() -> Vec<TraceRec> {
        vec![
            TraceRec::KswapdSleep { nid: 0 },
            TraceRec::KswapdWake { nid: 0, zid: 2, order: 3 },
            TraceRec::WakeupKswapd { nid: 1, zid: 2, order: 0 },
            TraceRec::DirectReclaimBegin {
                order: 0,
                may_writepage: true,
                gfp_flags: gfp::GFP_HIGHUSER_MOVABLE,
                classzone_idx: 2,
            },
            TraceRec::DirectReclaimEnd { nr_reclaimed: 32 },
            TraceRec::LruIsolate {
                isolate_mode: 0,
                classzone_idx: 2,
                order: 0,
                nr_requested: 32,
                nr_scanned: 40,
                nr_skipped: 8,
                nr_taken: 32,
                contig_taken: 0,
                contig_dirty: 0,
                contig_failed: 0,
                lru: lru::INACTIVE_FILE,
            },
            TraceRec::Writepage { pfn: 0x12345, file: true, sync: true },
            TraceRec::LruShrinkInactive {
                nid: 0,
                zid: 2,
                nr_scanned: 32,
                nr_reclaimed: 30,
                priority: 12,
                file: false,
                anon: true,
                sync: false,
                nr_dirty: 1,
                nr_writeback: 2,
                nr_congested: 0,
                nr_immediate: 0,
                nr_activate: 1,
                nr_ref_keep: 1,
                nr_unmap_fail: 0,
            },
            TraceRec::CongestionWait { usec_timeout: 100_000, usec_delayed: 100_000 },
            TraceRec::WaitIffCongested { usec_timeout: 100_000, usec_delayed: 0 },
        ]
    }

    #[test]
    fn every_event_in_3_0() {
        let expected = [
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_kswapd_sleep: nid=0",
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_kswapd_wake: nid=0 order=3",
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_wakeup_kswapd: nid=1 zid=2 order=0",
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_direct_reclaim_begin: order=0 may_writepage=1 \
             gfp_flags=GFP_HIGHUSER_MOVABLE",
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_direct_reclaim_end: nr_reclaimed=32",
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_lru_isolate: isolate_mode=0 order=0 \
             nr_requested=32 nr_scanned=40 nr_taken=32 contig_taken=0 contig_dirty=0 contig_failed=0",
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_writepage: page=ffffea00003fb718 pfn=74565 \
             flags=RECLAIM_WB_FILE|RECLAIM_WB_SYNC",
            "         kswapd0-27    [001]  1234.567891: mm_vmscan_lru_shrink_inactive: nid=0 zid=2 \
             nr_scanned=32 nr_reclaimed=30 priority=12 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC",
            "         kswapd0-27    [001]  1234.567891: writeback_congestion_wait: usec_timeout=100000 \
             usec_delayed=100000",
            "         kswapd0-27    [001]  1234.567891: writeback_wait_iff_congested: usec_timeout=100000 \
             usec_delayed=0",
        ];
        for (rec, want) in samples().iter().zip(expected) {
            assert_eq!(line(Era::V30, "kswapd0", 27, 1, rec), want);
            assert_eq!(line(Era::V31, "kswapd0", 27, 1, rec), want, "3.1 prints as 3.0");
        }
    }

    #[test]
    fn every_event_in_4_11() {
        let expected = [
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_kswapd_sleep: nid=0",
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_kswapd_wake: nid=0 zid=2 order=3",
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_wakeup_kswapd: nid=1 zid=2 order=0",
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_direct_reclaim_begin: order=0 \
             may_writepage=1 gfp_flags=GFP_HIGHUSER_MOVABLE classzone_idx=2",
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_direct_reclaim_end: nr_reclaimed=32",
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_lru_isolate: isolate_mode=0 classzone=2 \
             order=0 nr_requested=32 nr_scanned=40 nr_skipped=8 nr_taken=32 lru=inactive_file",
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_writepage: page=ffffea000048d140 \
             pfn=74565 flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC",
            "         kswapd0-27    [001] ....  1234.567891: mm_vmscan_lru_shrink_inactive: nid=0 \
             nr_scanned=32 nr_reclaimed=30 nr_dirty=1 nr_writeback=2 nr_congested=0 nr_immediate=0 \
             nr_activate=1 nr_ref_keep=1 nr_unmap_fail=0 priority=12 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC",
            "         kswapd0-27    [001] ....  1234.567891: writeback_congestion_wait: usec_timeout=100000 \
             usec_delayed=100000",
            "         kswapd0-27    [001] ....  1234.567891: writeback_wait_iff_congested: \
             usec_timeout=100000 usec_delayed=0",
        ];
        for (rec, want) in samples().iter().zip(expected) {
            assert_eq!(line(Era::V411, "kswapd0", 27, 1, rec), want);
        }
    }

    #[test]
    fn context_columns() {
        let rec = TraceRec::KswapdSleep { nid: 3 };
        // A long comm is cut to 15 bytes, the pid column grows, the
        // timestamp rounds to the nearest microsecond.
        let mut s = String::new();
        write_context(&mut s, Era::V30, 1_500, "a-very-long-command-name", 1234567, 12);
        assert_eq!(s, " a-very-long-com-1234567 [012]     0.000002: ");
        s.clear();
        write_context(&mut s, Era::V30, 123_456_789_012_345_678, "memhog", 4242, 0);
        assert_eq!(s, "          memhog-4242  [000] 123456789.012346: ");
        assert_eq!(
            line(Era::V30, "memhog", 1, 0, &rec),
            "          memhog-1     [000]  1234.567891: mm_vmscan_kswapd_sleep: nid=3"
        );
    }

    #[test]
    fn shrink_inactive_flags_3x() {
        let mut rec = samples()[7].clone();
        if let TraceRec::LruShrinkInactive { file, sync, .. } = &mut rec {
            *file = true;
            *sync = true;
        }
        assert!(line(Era::V30, "x", 1, 0, &rec).ends_with("flags=RECLAIM_WB_MIXED|RECLAIM_WB_SYNC"));
        assert!(line(Era::V411, "x", 1, 0, &rec).ends_with("flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"));
        let wp = TraceRec::Writepage { pfn: 1, file: false, sync: false };
        assert!(line(Era::V30, "x", 1, 0, &wp).ends_with("pfn=1 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC"));
    }

    #[test]
    fn lru_isolate_unknown_lru_is_hex() {
        let mut rec = samples()[5].clone();
        if let TraceRec::LruIsolate { lru, .. } = &mut rec {
            *lru = 7;
        }
        assert!(line(Era::V411, "x", 1, 0, &rec).ends_with(" lru=0x7"));
    }

    #[test]
    fn gfp_flags_3x() {
        let s = |g| gfp_flags_string(Era::V30, g);
        assert_eq!(s(gfp::GFP_KERNEL), "GFP_KERNEL");
        assert_eq!(s(gfp::GFP_USER), "GFP_USER");
        assert_eq!(s(gfp::GFP_HIGHUSER), "GFP_HIGHUSER");
        assert_eq!(s(gfp::GFP_HIGHUSER_MOVABLE), "GFP_HIGHUSER_MOVABLE");
        assert_eq!(s(0), "GFP_NOWAIT");
        assert_eq!(s(gfp::HIGH), "GFP_ATOMIC");
        assert_eq!(
            s(gfp::GFP_HIGHUSER_MOVABLE | gfp::GFP_THISNODE),
            "GFP_HIGHUSER_MOVABLE|GFP_NOWARN|GFP_NORETRY|GFP_THISNODE"
        );
        assert_eq!(s(gfp::GFP_KERNEL | gfp::ZERO | gfp::NOWARN), "GFP_KERNEL|GFP_NOWARN|GFP_ZERO");
        assert_eq!(s(gfp::GFP_KERNEL | gfp::RECLAIMABLE), "GFP_TEMPORARY");
        // Bits the table does not name fall through the zero-mask
        // GFP_NOTRACK entry and end as hex.
        assert_eq!(s(gfp::GFP_KERNEL | gfp::DMA32), "GFP_KERNEL|GFP_NOTRACK|0x4");
        assert_eq!(s(gfp::DMA), "GFP_NOTRACK|0x1");
        assert_eq!(gfp_flags_string(Era::V31, gfp::GFP_KERNEL), "GFP_KERNEL");
    }

    #[test]
    fn gfp_flags_4_11() {
        let s = |g| gfp_flags_string(Era::V411, g);
        assert_eq!(s(gfp::GFP_KERNEL), "GFP_KERNEL");
        assert_eq!(s(gfp::GFP_HIGHUSER_MOVABLE), "GFP_HIGHUSER_MOVABLE");
        assert_eq!(s(0), "GFP_NOWAIT");
        assert_eq!(s(gfp::HIGH), "GFP_ATOMIC");
        assert_eq!(s(gfp::GFP_KERNEL | gfp::DMA32), "GFP_KERNEL|GFP_DMA32");
        assert_eq!(s(gfp::GFP_KERNEL | gfp::RECLAIMABLE), "GFP_TEMPORARY");
        assert_eq!(
            s(gfp::GFP_HIGHUSER_MOVABLE | gfp::GFP_THISNODE),
            "GFP_HIGHUSER_MOVABLE|__GFP_NOWARN|__GFP_NORETRY|__GFP_THISNODE"
        );
        assert_eq!(s(gfp::GFP_KERNEL | gfp::ZERO | gfp::NOWARN), "GFP_KERNEL|__GFP_NOWARN|__GFP_ZERO");
        // 3.x GFP_TRANSHUGE (no kswapd) is 4.11's GFP_TRANSHUGE plus NORETRY.
        let thp3 = gfp::GFP_HIGHUSER_MOVABLE | 0x4000 | gfp::NOMEMALLOC | gfp::NORETRY | gfp::NOWARN | 0x400000;
        assert_eq!(s(thp3), "GFP_TRANSHUGE|__GFP_NORETRY");
        assert_eq!(gfp_flags_string(Era::V30, thp3), "GFP_TRANSHUGE");
    }

    #[test]
    fn names() {
        assert_eq!(Tp::from_name("mm_vmscan_lru_isolate"), Some(Tp::MmVmscanLruIsolate));
        assert_eq!(Tp::from_name("vmscan:mm_vmscan_lru_isolate"), Some(Tp::MmVmscanLruIsolate));
        assert_eq!(Tp::from_name("writeback/writeback_congestion_wait"), Some(Tp::WritebackCongestionWait));
        assert_eq!(Tp::from_name("writeback:mm_vmscan_lru_isolate"), None);
        assert_eq!(Tp::from_name("mm_vmscan_lru_shrink_active"), None);
        for tp in Tp::ALL {
            assert_eq!(Tp::from_name(tp.name()), Some(tp));
            assert_eq!(tp.system() == "writeback", tp.name().starts_with("writeback_"));
        }
        for (i, tp) in Tp::ALL.iter().enumerate() {
            assert_eq!(*tp as usize, i);
        }
    }

    /// A file in the temp directory, removed when dropped.
    struct TempPath(std::path::PathBuf);
    impl TempPath {
        fn new(tag: &str) -> TempPath {
            TempPath(std::env::temp_dir().join(format!("mmtwin-trace-{}-{tag}.txt", std::process::id())))
        }
        fn as_str(&self) -> &str {
            self.0.to_str().unwrap()
        }
    }
    impl Drop for TempPath {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    #[test]
    fn writes_and_flushes_the_file() {
        let p = TempPath::new("all");
        let mut t = Tracer::to_file(p.as_str(), None, Era::V30).unwrap();
        for rec in samples() {
            assert!(t.on(rec.tp()));
            t.emit(T, "memhog", 4242, 3, &rec);
        }
        assert_eq!(t.finish().unwrap(), 10);
        let text = std::fs::read_to_string(&p.0).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4 + 10);
        assert_eq!(lines[0], "# tracer: nop");
        assert_eq!(lines[2], "#           TASK-PID    CPU#    TIMESTAMP  FUNCTION");
        assert_eq!(lines[4], "          memhog-4242  [003]  1234.567891: mm_vmscan_kswapd_sleep: nid=0");
        assert!(text.ends_with("usec_timeout=100000 usec_delayed=0\n"));
        // finish() may be called again.
        assert_eq!(t.finish().unwrap(), 10);
    }

    #[test]
    fn header_4_11() {
        let p = TempPath::new("hdr411");
        let mut t = Tracer::to_file(p.as_str(), Some(&[]), Era::V411).unwrap();
        assert_eq!(t.finish().unwrap(), 0);
        let text = std::fs::read_to_string(&p.0).unwrap();
        assert_eq!(text.lines().count(), 9);
        assert!(text.starts_with("# tracer: nop\n#\n#                              _-----=> irqs-off\n"));
        assert!(text.ends_with("#              | |       |   ||||       |         |\n"));
    }

    #[test]
    fn filter_writes_only_enabled_events() {
        let p = TempPath::new("filter");
        let events = vec!["mm_vmscan_kswapd_wake".to_string(), "writeback:writeback_congestion_wait".to_string()];
        let mut t = Tracer::to_file(p.as_str(), Some(&events), Era::V411).unwrap();
        let on: Vec<Tp> = Tp::ALL.iter().copied().filter(|&tp| t.on(tp)).collect();
        assert_eq!(on, [Tp::MmVmscanKswapdWake, Tp::WritebackCongestionWait]);
        for rec in samples() {
            t.emit(T, "kswapd0", 27, 0, &rec);
        }
        assert_eq!(t.finish().unwrap(), 2);
        let text = std::fs::read_to_string(&p.0).unwrap();
        let events: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(events.len(), 2);
        assert!(events[0].ends_with("mm_vmscan_kswapd_wake: nid=0 zid=2 order=3"));
        assert!(events[1].contains("writeback_congestion_wait: "));
    }

    #[test]
    fn disabled_is_off() {
        let mut t = Tracer::disabled();
        for tp in Tp::ALL {
            assert!(!t.on(tp));
        }
        t.emit(T, "x", 1, 0, &TraceRec::KswapdSleep { nid: 0 });
        assert_eq!(t.finish().unwrap(), 0);
    }

    #[test]
    fn unknown_event_names_the_entry() {
        let p = TempPath::new("unknown");
        let events = vec!["mm_vmscan_kswapd_wake".to_string(), "mm_vmscan_kswapd_snooze".to_string()];
        let err = Tracer::to_file(p.as_str(), Some(&events), Era::V30).unwrap_err();
        assert_eq!(err.field, "trace.events[1]");
        assert!(err.message.contains("\"mm_vmscan_kswapd_snooze\""), "{err}");
        assert!(err.message.contains("allowed in kernel 3.0: mm_vmscan_kswapd_sleep, "), "{err}");
        assert!(err.message.contains("writeback_wait_iff_congested"), "{err}");
        assert!(!p.0.exists(), "names are checked before the file is created");
    }

    #[test]
    fn kernel_2_6_18_has_no_tracepoints() {
        let p = TempPath::new("2618");
        let events = vec!["mm_vmscan_kswapd_wake".to_string()];
        let err = Tracer::to_file(p.as_str(), Some(&events), Era::V2618).unwrap_err();
        assert_eq!(err.field, "trace.events[0]");
        assert!(err.message.contains("does not exist in kernel 2.6.18"), "{err}");
        assert!(err.message.contains("2.6.36"), "{err}");
        let err = Tracer::to_file(p.as_str(), None, Era::V2618).unwrap_err();
        assert_eq!(err.field, "trace");
        assert!(err.message.contains("2.6.18 has no tracepoints"), "{err}");
        let err = Tracer::to_file(p.as_str(), Some(&["bogus".to_string()]), Era::V2618).unwrap_err();
        assert_eq!(err.field, "trace.events[0]");
        assert!(!p.0.exists());
    }

    #[test]
    fn uncreatable_path_is_a_path_error() {
        let err = Tracer::to_file("/nonexistent-dir-mmtwin/trace.txt", None, Era::V30).unwrap_err();
        assert_eq!(err.field, "trace.path");
        assert!(err.message.contains("/nonexistent-dir-mmtwin/trace.txt"), "{err}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn write_errors_surface_in_finish() {
        if !std::path::Path::new("/dev/full").exists() {
            return;
        }
        let mut t = Tracer::to_file("/dev/full", None, Era::V30).unwrap();
        t.emit(T, "x", 1, 0, &TraceRec::KswapdSleep { nid: 0 });
        let err = t.finish().unwrap_err();
        assert_eq!(err.field, "trace.path");
    }
}
