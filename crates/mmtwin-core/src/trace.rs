//! A streaming writer of ftrace text for the tracepoints the simulated
//! kernel passes.
//!
//! The output is what `cat /sys/kernel/debug/tracing/trace` printed on the
//! simulated kernel with only the chosen events enabled, so that the kernel's
//! own `Documentation/trace/postprocess/trace-vmscan-postprocess.pl` and
//! MMTests' `trace-congestion-postprocess.pl` read it unchanged (Linux 6.1's
//! copy of the former with `TraceFormat::Postprocess61`; see below).
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
//! * 6.1's copy (Debian's linux-source-6.1, the one the test suite runs)
//!   accepts 3.0's prefix (irq-info is optional) but not 3.0's
//!   `mm_vmscan_lru_isolate` (it wants `classzone_idx= ... nr_skipped= ...
//!   lru=`) nor 3.0's `mm_vmscan_lru_shrink_inactive` (it wants the
//!   `nr_dirty= ... nr_activate_anon= nr_activate_file= ...` of 5.x): it
//!   skips those lines with a warning, so pages scanned and reclaimed come
//!   out 0. Its `mm_vmscan_wakeup_kswapd` pattern wants `gfp_flags=` too
//!   (counted anyway, with a warning). Nor does it read 6.1's own trace
//!   fully (`classzone=`, hex `pfn=`, no `may_writepage=`). So the layout
//!   is selectable: [`TraceFormat::Postprocess61`] writes each event as the
//!   6.1 script's built-in patterns expect (`write_fields_postprocess61`).
//!
//! # Statistics
//!
//! [`ReclaimStats`] aggregates the same events, as they are emitted and
//! whether or not they are written, into what the two FTrace blocks of
//! MMTests' 2011 reports show (docs/ftrace.md).

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
    /// `gfp_flags` (engine encoding) is printed only by
    /// [`TraceFormat::Postprocess61`]: 3.0, 3.1 and 4.11 do not print it.
    WakeupKswapd { nid: u32, zid: u32, order: u32, gfp_flags: u32 },
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

/// The text layout of a trace file.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum TraceFormat {
    /// What the simulated kernel prints: the 3.0/3.1 layout, or 4.11's.
    #[default]
    Kernel,
    /// The layout Linux 6.1's `trace-vmscan-postprocess.pl` parses with its
    /// built-in patterns (no single kernel printed exactly this; see the
    /// module documentation and docs/ftrace.md).
    Postprocess61,
}

impl TraceFormat {
    pub const ALL: [TraceFormat; 2] = [TraceFormat::Kernel, TraceFormat::Postprocess61];

    pub fn name(self) -> &'static str {
        match self {
            TraceFormat::Kernel => "kernel",
            TraceFormat::Postprocess61 => "postprocess-6.1",
        }
    }

    /// The format named `name` (`None`: the default, `kernel`); an unknown
    /// name is an error at `trace.format`.
    pub fn parse(name: Option<&str>) -> Result<TraceFormat, SpecError> {
        let Some(name) = name else { return Ok(TraceFormat::Kernel) };
        TraceFormat::ALL.iter().copied().find(|f| f.name() == name).ok_or_else(|| {
            let names: Vec<&str> = TraceFormat::ALL.iter().map(|f| f.name()).collect();
            SpecError::new("trace.format", format!("{name:?} is not allowed; one of {}", names.join(", ")))
        })
    }
}

/// Writes enabled events to a file as ftrace text, and (with
/// [`with_stats`](Tracer::with_stats)) aggregates every event into the
/// FTrace reclaim statistics whether or not it is written.
/// `Tracer::disabled()` writes nothing and its [`on`](Tracer::on) is always
/// false.
#[derive(Debug)]
pub struct Tracer {
    out: Option<BufWriter<File>>,
    /// Bit `tp as u8` set for every enabled tracepoint.
    mask: u16,
    /// `mask` plus every tracepoint the statistics need.
    any: u16,
    era: Era,
    format: TraceFormat,
    path: String,
    /// The line being formatted; reused so that emitting does not allocate.
    line: String,
    lines: u64,
    /// The first I/O error; once set, nothing more is written.
    error: Option<String>,
    stats: Option<ReclaimStats>,
}

impl Tracer {
    /// A tracer with every event off.
    pub fn disabled() -> Tracer {
        Tracer {
            out: None,
            mask: 0,
            any: 0,
            era: Era::V30,
            format: TraceFormat::Kernel,
            path: String::new(),
            line: String::new(),
            lines: 0,
            error: None,
            stats: None,
        }
    }

    /// Create (truncate) `path` and trace the named `events` to it, or
    /// every event of the era when `events` is `None`, in `format`. Names
    /// are checked before the file is touched. An unknown name is an error
    /// at `trace.events[i]`, and so is a name the era's kernel lacks (every
    /// name in 2.6.18). Tracing 2.6.18 with no list is an error at
    /// `trace`. A file that cannot be created is an error at `trace.path`.
    pub fn to_file(path: &str, events: Option<&[String]>, format: TraceFormat, era: Era) -> Result<Tracer, SpecError> {
        let mask = event_mask(events, era)?;
        let file =
            File::create(path).map_err(|e| SpecError::new("trace.path", format!("cannot create {path:?}: {e}")))?;
        let mut tracer = Tracer {
            out: Some(BufWriter::with_capacity(1 << 16, file)),
            mask,
            any: mask,
            era,
            format,
            path: path.to_string(),
            line: String::with_capacity(256),
            lines: 0,
            error: None,
            stats: None,
        };
        tracer.write_raw(header(tracer.layout_era()));
        Ok(tracer)
    }

    /// Also aggregate the FTrace reclaim statistics ([`ReclaimStats`]) from
    /// every event, traced to the file or not. A kernel without the
    /// tracepoints (2.6.18) has none: the tracer is returned unchanged.
    pub fn with_stats(mut self, era: Era) -> Tracer {
        if Tp::ALL.iter().any(|tp| tp.exists_in(era)) {
            self.stats = Some(ReclaimStats::default());
            self.any = Tp::ALL.iter().filter(|tp| tp.exists_in(era)).fold(self.mask, |m, tp| m | tp.bit());
        }
        self
    }

    /// The statistics, if [`with_stats`](Tracer::with_stats) turned them on.
    pub fn stats(&self) -> Option<&ReclaimStats> {
        self.stats.as_ref()
    }

    /// The era whose context columns and header the file gets: the
    /// 6.1-script layout keeps 3.0's (no irq-info column), which both the
    /// 6.1 script and MMTests' 2011 congestion script accept.
    fn layout_era(&self) -> Era {
        match self.format {
            TraceFormat::Kernel => self.era,
            TraceFormat::Postprocess61 => Era::V30,
        }
    }

    /// Whether `tp` is traced: check this before building a record.
    #[inline]
    pub fn on(&self, tp: Tp) -> bool {
        self.any & tp.bit() != 0
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
        if let Some(stats) = self.stats.as_mut() {
            stats.record(now_ns, pid, rec);
        }
        if self.mask & tp.bit() == 0 || self.error.is_some() {
            return;
        }
        let era = self.layout_era();
        let line = &mut self.line;
        line.clear();
        write_context(line, era, now_ns, comm, pid, cpu);
        line.push_str(tp.name());
        line.push_str(": ");
        match self.format {
            TraceFormat::Kernel => write_fields(line, self.era, rec),
            TraceFormat::Postprocess61 => write_fields_postprocess61(line, rec),
        }
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

/// The timestamp ftrace prints, in microseconds: `ns2usecs()` rounds to the
/// nearest one.
pub fn ns2usecs(now_ns: u64) -> u64 {
    now_ns / 1000 + u64::from(now_ns % 1000 >= 500)
}

/// `trace_print_context()`: task, pid, cpu, (4.11: irq-info), timestamp.
fn write_context(line: &mut String, era: Era, now_ns: u64, comm: &str, pid: u32, cpu: u32) {
    let usecs = ns2usecs(now_ns);
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
        TraceRec::WakeupKswapd { nid, zid, order, .. } => {
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

/// The fields of [`TraceFormat::Postprocess61`]: what the built-in patterns
/// of Linux 6.1's `trace-vmscan-postprocess.pl` match (its
/// `$regex_*_default`), each event in the layout of the kernels those
/// patterns were written for:
///
/// * `mm_vmscan_wakeup_kswapd`: `nid= zid= order= gfp_flags=` (4.16 to 5.x);
/// * `mm_vmscan_direct_reclaim_begin`: `order= may_writepage= gfp_flags=`
///   (up to 4.x);
/// * `mm_vmscan_lru_isolate`: `isolate_mode= classzone_idx= order=
///   nr_requested= nr_scanned= nr_skipped= nr_taken= lru=`. No kernel
///   printed `classzone_idx=` here (4.10 to 6.1 print `classzone=`), but
///   the script looks for it. `isolate_mode` is 1 for an inactive list and
///   2 for an active one (ISOLATE_INACTIVE / ISOLATE_ACTIVE of 3.2 to 3.x),
///   the values the script tells apart;
/// * `mm_vmscan_lru_shrink_inactive`: 6.1's own layout, `nr_activate_anon`
///   and `nr_activate_file` split by the list's type;
/// * `mm_vmscan_writepage`: `pfn=` in decimal (up to 4.x; 6.1 prints hex,
///   which the script cannot read), `RECLAIM_WB_SYNC` as 3.x printed it;
/// * the rest as 3.0/3.1 print them (6.1 still prints `kswapd_sleep`,
///   `kswapd_wake`, `direct_reclaim_end` so); gfp masks with 4.11's names.
fn write_fields_postprocess61(line: &mut String, rec: &TraceRec) {
    let _ = match *rec {
        TraceRec::WakeupKswapd { nid, zid, order, gfp_flags } => {
            let _ = write!(line, "nid={} zid={} order={} gfp_flags=", nid as i32, zid as i32, order as i32);
            write_gfp_flags(line, Era::V411, gfp_flags);
            Ok(())
        }
        TraceRec::DirectReclaimBegin { order, may_writepage, gfp_flags, .. } => {
            let _ = write!(line, "order={} may_writepage={} gfp_flags=", order as i32, i32::from(may_writepage));
            write_gfp_flags(line, Era::V411, gfp_flags);
            Ok(())
        }
        TraceRec::LruIsolate { classzone_idx, order, nr_requested, nr_scanned, nr_skipped, nr_taken, lru, .. } => {
            let mode = if lru == lru::ACTIVE_ANON || lru == lru::ACTIVE_FILE { 2 } else { 1 };
            let _ = write!(
                line,
                "isolate_mode={mode} classzone_idx={} order={} nr_requested={nr_requested} nr_scanned={nr_scanned} \
                 nr_skipped={nr_skipped} nr_taken={nr_taken} lru=",
                classzone_idx as i32, order as i32
            );
            match LRU_NAMES.get(lru as usize) {
                Some(name) => {
                    line.push_str(name);
                    Ok(())
                }
                None => write!(line, "{:#x}", lru),
            }
        }
        TraceRec::LruShrinkInactive {
            nid,
            nr_scanned,
            nr_reclaimed,
            priority,
            file,
            nr_dirty,
            nr_writeback,
            nr_congested,
            nr_immediate,
            nr_activate,
            nr_ref_keep,
            nr_unmap_fail,
            ..
        } => {
            let (act_anon, act_file) = if file { (0, nr_activate as i32) } else { (nr_activate as i32, 0) };
            let _ = write!(
                line,
                "nid={} nr_scanned={} nr_reclaimed={} nr_dirty={} nr_writeback={} nr_congested={} \
                 nr_immediate={} nr_activate_anon={act_anon} nr_activate_file={act_file} nr_ref_keep={} \
                 nr_unmap_fail={} priority={priority} flags=",
                nid as i32,
                nr_scanned as i64,
                nr_reclaimed as i64,
                nr_dirty as i64,
                nr_writeback as i64,
                nr_congested as i64,
                nr_immediate as i64,
                nr_ref_keep as i64,
                nr_unmap_fail as i64
            );
            write_reclaim_flags(line, if file { RECLAIM_WB_FILE } else { RECLAIM_WB_ANON } | RECLAIM_WB_ASYNC);
            Ok(())
        }
        TraceRec::Writepage { pfn, file, sync } => {
            let page = VMEMMAP_START.wrapping_add(pfn.wrapping_mul(64));
            let _ = write!(line, "page={page:016x} pfn={pfn} flags=");
            let kind = if file { RECLAIM_WB_FILE } else { RECLAIM_WB_ANON };
            write_reclaim_flags(line, kind | if sync { RECLAIM_WB_SYNC } else { RECLAIM_WB_ASYNC });
            Ok(())
        }
        _ => {
            write_fields(line, Era::V30, rec);
            Ok::<(), std::fmt::Error>(())
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

// --------------------------------------------------------------------------
// FTrace reclaim statistics

/// One wait kind's totals: how many, microseconds slept (`usec_delayed`
/// summed), and how many slept their whole timeout (`usec_timeout <=
/// usec_delayed`, MMTests' "full").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WaitTotals {
    pub waited: u64,
    pub us: u64,
    pub full: u64,
}

impl WaitTotals {
    fn add(&mut self, usec_timeout: u64, usec_delayed: u64) {
        // The fields are `unsigned int` in the trace.
        let (timeout, delayed) = (u64::from(usec_timeout as u32), u64::from(usec_delayed as u32));
        self.waited += 1;
        self.us += delayed;
        self.full += u64::from(timeout <= delayed);
    }
    fn merge(&mut self, o: &WaitTotals) {
        self.waited += o.waited;
        self.us += o.us;
        self.full += o.full;
    }
}

/// Bins of a [`LatencyHist`]: bin 0 holds 0 µs, bin `i` (1..=27) holds
/// `2^(i-1)` to `2^i - 1` µs, and bin 28 everything from `2^27` µs (134 s).
pub const LATENCY_BINS: usize = 29;

/// A log2 histogram of durations in microseconds: fixed bins, so recording
/// allocates nothing and the memory does not grow with the number of events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LatencyHist {
    pub count: u64,
    pub sum_us: u64,
    pub bins: [u64; LATENCY_BINS],
}

impl Default for LatencyHist {
    fn default() -> Self {
        LatencyHist { count: 0, sum_us: 0, bins: [0; LATENCY_BINS] }
    }
}

impl LatencyHist {
    /// The bin of a duration of `us` microseconds.
    #[inline]
    pub fn bin(us: u64) -> usize {
        ((64 - us.leading_zeros()) as usize).min(LATENCY_BINS - 1)
    }
    #[inline]
    pub fn add(&mut self, us: u64) {
        self.count += 1;
        self.sum_us += us;
        self.bins[Self::bin(us)] += 1;
    }
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({ "count": self.count, "sum_us": self.sum_us, "log2_us": self.bins.to_vec() })
    }
}

/// What the post-processing scripts keep per process, for one task.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskReclaim {
    /// mm_vmscan_direct_reclaim_begin events.
    pub direct_begin: u64,
    /// mm_vmscan_wakeup_kswapd events.
    pub wakeup_kswapd: u64,
    /// nr_scanned of mm_vmscan_lru_isolate from an inactive list (the
    /// script leaves out isolations from the active lists, "rotation").
    pub scanned: u64,
    /// nr_reclaimed of mm_vmscan_lru_shrink_inactive.
    pub reclaimed: u64,
    /// mm_vmscan_writepage by kind: file async, anon async, file sync, anon sync.
    pub writes: [u64; 4],
    /// mm_vmscan_kswapd_wake while not awake (a wakeup) and while awake (a re-wakeup).
    pub kswapd_wake: u64,
    pub kswapd_rewake: u64,
    /// Direct reclaim latencies summed (begin to end, printed microseconds).
    pub direct_us: u64,
    /// kswapd awake times summed (wake to sleep).
    pub kswapd_us: u64,
    /// writeback_congestion_wait and writeback_wait_iff_congested.
    pub congest: WaitTotals,
    pub conditional: WaitTotals,
    direct_begin_at: Option<u64>,
    /// In direct reclaim: a begin not yet followed by its end.
    direct_open: bool,
    /// Begins followed by another begin, not by an end.
    direct_abandoned: u64,
    /// The script's STATE_KSWAPD_BEGIN: 0 when not awake.
    kswapd_begin_at: u64,
}

/// Index into [`TaskReclaim::writes`].
pub mod wb {
    pub const FILE_ASYNC: usize = 0;
    pub const ANON_ASYNC: usize = 1;
    pub const FILE_SYNC: usize = 2;
    pub const ANON_SYNC: usize = 3;
}

/// The FTrace reclaim statistics, aggregated as the events are emitted
/// (no text is formatted for them): per task, what
/// `trace-vmscan-postprocess.pl` and MMTests' `trace-congestion-postprocess.pl`
/// keep per process; [`summary`](ReclaimStats::summary) applies their
/// rules. Indexed by pid; the vector grows only when a new task first
/// passes a tracepoint, so recording allocates nothing per event.
///
/// Timestamps are the ones the trace prints (microseconds, rounded as
/// `ns2usecs()`), so latencies equal what a script computes from the text.
#[derive(Clone, Debug, Default)]
pub struct ReclaimStats {
    tasks: Vec<TaskReclaim>,
    /// Every task's direct reclaim latencies (begin to end, as
    /// `direct_stall_us` sums them), congestion_wait and
    /// wait_iff_congested sleeps (`usec_delayed`).
    pub direct_stall: LatencyHist,
    pub congestion_wait: LatencyHist,
    pub wait_iff_congested: LatencyHist,
}

impl ReclaimStats {
    /// Account one event of task `pid` at `now_ns`.
    pub fn record(&mut self, now_ns: u64, pid: u32, rec: &TraceRec) {
        let i = pid as usize;
        if i >= self.tasks.len() {
            self.tasks.resize(i + 1, TaskReclaim::default());
        }
        let us = ns2usecs(now_ns);
        let t = &mut self.tasks[i];
        match *rec {
            TraceRec::KswapdSleep { .. } => {
                // The script subtracts STATE_KSWAPD_BEGIN even when it is 0.
                t.kswapd_us += us - t.kswapd_begin_at;
                t.kswapd_begin_at = 0;
            }
            TraceRec::KswapdWake { .. } => {
                if t.kswapd_begin_at == 0 {
                    t.kswapd_wake += 1;
                    t.kswapd_begin_at = us;
                } else {
                    t.kswapd_rewake += 1;
                }
            }
            TraceRec::WakeupKswapd { .. } => t.wakeup_kswapd += 1,
            TraceRec::DirectReclaimBegin { .. } => {
                t.direct_begin += 1;
                t.direct_begin_at = Some(us);
                t.direct_abandoned += u64::from(t.direct_open);
                t.direct_open = true;
            }
            TraceRec::DirectReclaimEnd { .. } => {
                if let Some(b) = t.direct_begin_at {
                    t.direct_us += us - b;
                    self.direct_stall.add(us - b);
                }
                t.direct_open = false;
            }
            TraceRec::LruIsolate { lru, nr_scanned, .. } => {
                if lru != lru::ACTIVE_ANON && lru != lru::ACTIVE_FILE {
                    t.scanned += nr_scanned;
                }
            }
            TraceRec::LruShrinkInactive { nr_reclaimed, .. } => t.reclaimed += nr_reclaimed,
            TraceRec::Writepage { file, sync, .. } => {
                let k = match (file, sync) {
                    (true, false) => wb::FILE_ASYNC,
                    (false, false) => wb::ANON_ASYNC,
                    (true, true) => wb::FILE_SYNC,
                    (false, true) => wb::ANON_SYNC,
                };
                t.writes[k] += 1;
            }
            TraceRec::CongestionWait { usec_timeout, usec_delayed } => {
                t.congest.add(usec_timeout, usec_delayed);
                self.congestion_wait.add(u64::from(usec_delayed as u32));
            }
            TraceRec::WaitIffCongested { usec_timeout, usec_delayed } => {
                t.conditional.add(usec_timeout, usec_delayed);
                self.wait_iff_congested.add(u64::from(usec_delayed as u32));
            }
        }
    }

    /// Task `pid`'s counters (zeros if it passed no tracepoint).
    pub fn task(&self, pid: u32) -> TaskReclaim {
        self.tasks.get(pid as usize).copied().unwrap_or_default()
    }

    /// The figures of the two FTrace blocks as JSON (docs/ftrace.md).
    ///
    /// Processes are grouped by name as the scripts' `--ignore-pid` (the
    /// way MMTests ran them) groups them: by the part of the comm their
    /// prefix pattern captures (`[A-Za-z0-9-]*` before `-PID`, so
    /// `fs_mark` counts as `mark`). vmscan: a name with a direct reclaim is a
    /// direct reclaimer and all its counters go to the Direct rows; a name
    /// with a kswapd wakeup goes to the Kswapd rows. congestion_wait: a
    /// name containing `kswapd` is kswapd, every other name is Direct.
    /// Latencies are summed over every task (the script run per pid);
    /// `--ignore-pid` garbles them when several tasks share a name (see
    /// docs/ftrace.md). `comm_of` gives a pid's comm; `end_ns` is the end of
    /// the run, for `kswapd_awake_open_us` (kswapd time awake that no sleep
    /// event closed, which the scripts do not count).
    pub fn summary(&self, comm_of: &dyn Fn(u32) -> String, end_ns: u64) -> serde_json::Value {
        let mut groups: Vec<(String, TaskReclaim)> = Vec::new();
        let mut direct_us = 0;
        let mut kswapd_us = 0;
        let mut open_us = 0;
        let mut direct_open = 0u64;
        let mut direct_abandoned = 0u64;
        let end_us = ns2usecs(end_ns);
        for (pid, t) in self.tasks.iter().enumerate() {
            if *t == TaskReclaim::default() {
                continue;
            }
            direct_us += t.direct_us;
            kswapd_us += t.kswapd_us;
            if t.kswapd_begin_at != 0 {
                open_us += end_us.saturating_sub(t.kswapd_begin_at);
            }
            direct_open += u64::from(t.direct_open);
            direct_abandoned += t.direct_abandoned;
            let comm = comm_of(pid as u32);
            let name = script_name(kernel_comm(&comm));
            let name = if name.is_empty() { "NO_PROCESS_NAME" } else { name };
            let g = match groups.iter().position(|(n, _)| n == name) {
                Some(k) => &mut groups[k].1,
                None => {
                    groups.push((name.to_string(), TaskReclaim::default()));
                    &mut groups.last_mut().unwrap().1
                }
            };
            g.direct_begin += t.direct_begin;
            g.wakeup_kswapd += t.wakeup_kswapd;
            g.scanned += t.scanned;
            g.reclaimed += t.reclaimed;
            for (a, b) in g.writes.iter_mut().zip(t.writes) {
                *a += b;
            }
            g.kswapd_wake += t.kswapd_wake;
            g.kswapd_rewake += t.kswapd_rewake;
            g.congest.merge(&t.congest);
            g.conditional.merge(&t.conditional);
        }
        let mut direct = TaskReclaim::default();
        let mut kswapd = TaskReclaim::default();
        let mut waits = [[WaitTotals::default(); 2]; 2]; // [direct, kswapd][congest, conditional]
        for (name, g) in &groups {
            for (on, acc) in [(g.direct_begin > 0, &mut direct), (g.kswapd_wake > 0, &mut kswapd)] {
                if !on {
                    continue;
                }
                acc.direct_begin += g.direct_begin;
                acc.wakeup_kswapd += g.wakeup_kswapd;
                acc.scanned += g.scanned;
                acc.reclaimed += g.reclaimed;
                for (a, b) in acc.writes.iter_mut().zip(g.writes) {
                    *a += b;
                }
                acc.kswapd_wake += g.kswapd_wake;
                acc.kswapd_rewake += g.kswapd_rewake;
            }
            let w = &mut waits[usize::from(name.contains("kswapd"))];
            w[0].merge(&g.congest);
            w[1].merge(&g.conditional);
        }
        let waits_json = |w: &[WaitTotals; 2]| {
            serde_json::json!({
                "congest_waited": w[0].waited, "congest_us": w[0].us, "congest_full": w[0].full,
                "conditional_waited": w[1].waited, "conditional_us": w[1].us, "conditional_full": w[1].full,
            })
        };
        serde_json::json!({
            "vmscan": {
                "direct_reclaims": direct.direct_begin,
                "direct_pages_scanned": direct.scanned,
                "direct_pages_reclaimed": direct.reclaimed,
                "direct_write_file_async": direct.writes[wb::FILE_ASYNC],
                "direct_write_anon_async": direct.writes[wb::ANON_ASYNC],
                "direct_write_file_sync": direct.writes[wb::FILE_SYNC],
                "direct_write_anon_sync": direct.writes[wb::ANON_SYNC],
                "wake_kswapd_requests": direct.wakeup_kswapd,
                "kswapd_wakeups": kswapd.kswapd_wake,
                "kswapd_rewakeups": kswapd.kswapd_rewake,
                "kswapd_pages_scanned": kswapd.scanned,
                "kswapd_pages_reclaimed": kswapd.reclaimed,
                "kswapd_write_file_async": kswapd.writes[wb::FILE_ASYNC],
                "kswapd_write_anon_async": kswapd.writes[wb::ANON_ASYNC],
                "kswapd_write_file_sync": kswapd.writes[wb::FILE_SYNC],
                "kswapd_write_anon_sync": kswapd.writes[wb::ANON_SYNC],
                "direct_stall_us": direct_us,
                "kswapd_awake_us": kswapd_us,
                "kswapd_awake_open_us": open_us,
                "direct_reclaims_open": direct_open,
                "direct_reclaims_abandoned": direct_abandoned,
            },
            "congestion_wait": { "direct": waits_json(&waits[0]), "kswapd": waits_json(&waits[1]) },
            "latency": {
                "direct_stall": self.direct_stall.to_json(),
                "congestion_wait": self.congestion_wait.to_json(),
                "wait_iff_congested": self.wait_iff_congested.to_json(),
            },
        })
    }
}

/// The process name the scripts' prefix pattern captures from a comm: the
/// longest tail made of `[A-Za-z0-9-]` (the pattern is not anchored, so a
/// match starts after the last other character: `fs_mark` gives `mark`).
pub fn script_name(comm: &str) -> &str {
    let start = comm
        .char_indices()
        .rfind(|&(_, c)| !(c.is_ascii_alphanumeric() || c == '-'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    &comm[start..]
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
            TraceRec::WakeupKswapd { nid: 1, zid: 2, order: 0, gfp_flags: gfp::GFP_HIGHUSER_MOVABLE },
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
        let mut t = Tracer::to_file(p.as_str(), None, TraceFormat::Kernel, Era::V30).unwrap();
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
        let mut t = Tracer::to_file(p.as_str(), Some(&[]), TraceFormat::Kernel, Era::V411).unwrap();
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
        let mut t = Tracer::to_file(p.as_str(), Some(&events), TraceFormat::Kernel, Era::V411).unwrap();
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

    fn line61(rec: &TraceRec) -> String {
        let mut s = String::new();
        write_context(&mut s, Era::V30, T, "kswapd0", 27, 1);
        s.push_str(rec.tp().name());
        s.push_str(": ");
        write_fields_postprocess61(&mut s, rec);
        s
    }

    #[test]
    fn every_event_for_the_6_1_script() {
        let expected = [
            "mm_vmscan_kswapd_sleep: nid=0",
            "mm_vmscan_kswapd_wake: nid=0 order=3",
            "mm_vmscan_wakeup_kswapd: nid=1 zid=2 order=0 gfp_flags=GFP_HIGHUSER_MOVABLE",
            "mm_vmscan_direct_reclaim_begin: order=0 may_writepage=1 gfp_flags=GFP_HIGHUSER_MOVABLE",
            "mm_vmscan_direct_reclaim_end: nr_reclaimed=32",
            "mm_vmscan_lru_isolate: isolate_mode=1 classzone_idx=2 order=0 nr_requested=32 nr_scanned=40 \
             nr_skipped=8 nr_taken=32 lru=inactive_file",
            "mm_vmscan_writepage: page=ffffea000048d140 pfn=74565 flags=RECLAIM_WB_FILE|RECLAIM_WB_SYNC",
            "mm_vmscan_lru_shrink_inactive: nid=0 nr_scanned=32 nr_reclaimed=30 nr_dirty=1 nr_writeback=2 \
             nr_congested=0 nr_immediate=0 nr_activate_anon=1 nr_activate_file=0 nr_ref_keep=1 nr_unmap_fail=0 \
             priority=12 flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC",
            "writeback_congestion_wait: usec_timeout=100000 usec_delayed=100000",
            "writeback_wait_iff_congested: usec_timeout=100000 usec_delayed=0",
        ];
        for (rec, want) in samples().iter().zip(expected) {
            assert_eq!(line61(rec), format!("         kswapd0-27    [001]  1234.567891: {want}"));
        }
        // An active list is isolate_mode 2, the value the script leaves out.
        let mut rec = samples()[5].clone();
        if let TraceRec::LruIsolate { lru: l, .. } = &mut rec {
            *l = lru::ACTIVE_ANON;
        }
        assert!(line61(&rec).contains("isolate_mode=2 classzone_idx=2") && line61(&rec).ends_with("lru=active_anon"));
    }

    #[test]
    fn formats_by_name() {
        assert_eq!(TraceFormat::parse(None).unwrap(), TraceFormat::Kernel);
        assert_eq!(TraceFormat::parse(Some("postprocess-6.1")).unwrap(), TraceFormat::Postprocess61);
        let err = TraceFormat::parse(Some("6.1")).unwrap_err();
        assert_eq!(err.field, "trace.format");
        assert!(err.message.contains("\"6.1\" is not allowed; one of kernel, postprocess-6.1"), "{err}");
    }

    #[test]
    fn the_6_1_layout_keeps_the_3_0_header_and_context() {
        let p = TempPath::new("pp61");
        let mut t = Tracer::to_file(p.as_str(), None, TraceFormat::Postprocess61, Era::V411).unwrap();
        t.emit(T, "kswapd0", 27, 1, &samples()[1]);
        t.finish().unwrap();
        let text = std::fs::read_to_string(&p.0).unwrap();
        assert!(text.starts_with("# tracer: nop\n#\n#           TASK-PID    CPU#    TIMESTAMP  FUNCTION\n"));
        assert!(text.ends_with("         kswapd0-27    [001]  1234.567891: mm_vmscan_kswapd_wake: nid=0 order=3\n"));
    }

    fn stats_of(events: &[(u64, u32, TraceRec)]) -> ReclaimStats {
        let mut st = ReclaimStats::default();
        for (t, pid, rec) in events {
            st.record(*t, *pid, rec);
        }
        st
    }

    const MS: u64 = 1_000_000;

    fn isolate(lru_: u32, nr_scanned: u64) -> TraceRec {
        TraceRec::LruIsolate {
            isolate_mode: 0,
            classzone_idx: 1,
            order: 0,
            nr_requested: 32,
            nr_scanned,
            nr_skipped: 0,
            nr_taken: nr_scanned,
            contig_taken: 0,
            contig_dirty: 0,
            contig_failed: 0,
            lru: lru_,
        }
    }

    fn shrink(nr_reclaimed: u64) -> TraceRec {
        let mut r = samples()[7].clone();
        if let TraceRec::LruShrinkInactive { nr_reclaimed: n, .. } = &mut r {
            *n = nr_reclaimed;
        }
        r
    }

    #[test]
    fn per_task_counts_as_the_script_keeps_them() {
        let begin = samples()[3].clone();
        let end = samples()[4].clone();
        let st = stats_of(&[
            // kswapd (pid 1): asleep at boot, so its first sleep counts from 0.
            (5 * MS, 1, TraceRec::KswapdSleep { nid: 0 }),
            (10 * MS, 1, TraceRec::KswapdWake { nid: 0, zid: 0, order: 0 }),
            (12 * MS, 1, TraceRec::KswapdWake { nid: 0, zid: 0, order: 0 }),
            (13 * MS, 1, isolate(lru::INACTIVE_FILE, 32)),
            (13 * MS, 1, isolate(lru::ACTIVE_FILE, 32)),
            (13 * MS, 1, shrink(20)),
            (13 * MS, 1, TraceRec::Writepage { pfn: 9, file: true, sync: false }),
            (13 * MS, 1, TraceRec::Writepage { pfn: 9, file: false, sync: false }),
            (13 * MS, 1, TraceRec::Writepage { pfn: 9, file: false, sync: true }),
            (20 * MS + 499, 1, TraceRec::KswapdSleep { nid: 0 }),
            (30 * MS, 1, TraceRec::KswapdWake { nid: 0, zid: 0, order: 0 }),
            // A direct reclaimer (pid 3): two reclaims, 1.5 ms and 0.25 ms.
            (11 * MS, 3, TraceRec::WakeupKswapd { nid: 0, zid: 1, order: 0, gfp_flags: 0 }),
            (11 * MS, 3, begin.clone()),
            (11 * MS, 3, isolate(lru::INACTIVE_ANON, 7)),
            (12 * MS + 500 * 1000, 3, end.clone()),
            (14 * MS, 3, begin),
            (14 * MS + 250 * 1000, 3, end),
            (15 * MS, 3, TraceRec::CongestionWait { usec_timeout: 100_000, usec_delayed: 100_000 }),
            (15 * MS, 3, TraceRec::CongestionWait { usec_timeout: 100_000, usec_delayed: 4_000 }),
            (15 * MS, 3, TraceRec::WaitIffCongested { usec_timeout: 100_000, usec_delayed: 0 }),
        ]);
        let k = st.task(1);
        assert_eq!((k.kswapd_wake, k.kswapd_rewake), (2, 1));
        // 5 ms (sleep with no wake: from 0) + 10.000 ms (10 to 20.000499 rounds down).
        assert_eq!(k.kswapd_us, 5_000 + 10_000);
        assert_eq!((k.scanned, k.reclaimed), (32, 20), "the active list's isolation is not scanning");
        assert_eq!(k.writes, [1, 1, 0, 1]);
        let d = st.task(3);
        assert_eq!((d.direct_begin, d.wakeup_kswapd, d.scanned), (2, 1, 7));
        assert_eq!(d.direct_us, 1_500 + 250);
        assert_eq!(d.congest, WaitTotals { waited: 2, us: 104_000, full: 1 });
        assert_eq!(d.conditional, WaitTotals { waited: 1, us: 0, full: 0 });
        assert_eq!(st.task(2), TaskReclaim::default());
        assert_eq!(st.task(99), TaskReclaim::default());

        let comms = ["init", "kswapd0", "flush-8:0", "fs_mark"];
        let sum = st.summary(&|pid| comms[pid as usize].to_string(), 40 * MS);
        let v = &sum["vmscan"];
        assert_eq!(v["direct_reclaims"], 2);
        assert_eq!(v["direct_pages_scanned"], 7);
        assert_eq!(v["wake_kswapd_requests"], 1);
        assert_eq!(v["kswapd_wakeups"], 2);
        assert_eq!(v["kswapd_rewakeups"], 1);
        assert_eq!(v["kswapd_pages_scanned"], 32);
        assert_eq!(v["kswapd_pages_reclaimed"], 20);
        assert_eq!(v["kswapd_write_file_async"], 1);
        assert_eq!(v["kswapd_write_anon_sync"], 1);
        assert_eq!(v["direct_stall_us"], 1_750);
        assert_eq!(v["kswapd_awake_us"], 15_000);
        assert_eq!(v["kswapd_awake_open_us"], 10_000, "awake since 30 ms when the run ends at 40 ms");
        let c = &sum["congestion_wait"];
        assert_eq!(c["direct"]["congest_waited"], 2);
        assert_eq!(c["direct"]["congest_us"], 104_000);
        assert_eq!(c["direct"]["congest_full"], 1);
        assert_eq!(c["direct"]["conditional_waited"], 1);
        assert_eq!(c["kswapd"]["congest_waited"], 0);
    }

    #[test]
    fn latency_histograms_count_ended_stalls_and_every_wait() {
        let begin = samples()[3].clone();
        let end = TraceRec::DirectReclaimEnd { nr_reclaimed: 32 };
        let st = stats_of(&[
            // pid 2: a reclaim of 3 ms; then one dropped without an end, and one of 40 us.
            (MS, 2, begin.clone()),
            (4 * MS, 2, end.clone()),
            (5 * MS, 2, begin.clone()),
            (6 * MS, 2, begin.clone()),
            (6 * MS + 40_000, 2, end),
            // pid 3: still reclaiming at the end.
            (7 * MS, 3, begin),
            (7 * MS, 3, TraceRec::CongestionWait { usec_timeout: 100_000, usec_delayed: 100_000 }),
            (7 * MS, 3, TraceRec::WaitIffCongested { usec_timeout: 100_000, usec_delayed: 0 }),
        ]);
        let sum = st.summary(&|pid| format!("t{pid}"), 8 * MS);
        let v = &sum["vmscan"];
        assert_eq!((v["direct_reclaims"].as_u64(), v["direct_reclaims_open"].as_u64(), v["direct_reclaims_abandoned"].as_u64()), (Some(4), Some(1), Some(1)));
        assert_eq!(v["direct_stall_us"], 3_040);
        let d = &sum["latency"]["direct_stall"];
        assert_eq!((d["count"].as_u64(), d["sum_us"].as_u64()), (Some(2), Some(3_040)));
        let bins: Vec<u64> = d["log2_us"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        assert_eq!(bins.len(), LATENCY_BINS);
        assert_eq!((bins[6], bins[12]), (1, 1), "40 us in [32, 64), 3000 us in [2048, 4096)");
        assert_eq!(sum["latency"]["congestion_wait"]["log2_us"][17], 1, "100 ms in [65536, 131072) us");
        assert_eq!(sum["latency"]["wait_iff_congested"]["log2_us"][0], 1);
    }

    #[test]
    fn names_group_as_with_ignore_pid() {
        let wake = TraceRec::WakeupKswapd { nid: 0, zid: 1, order: 0, gfp_flags: 0 };
        let st = stats_of(&[
            // pid 2 reclaims directly; pid 3 has the same comm and only wakes
            // kswapd and scans (zone_reclaim): with --ignore-pid both count.
            (MS, 2, samples()[3].clone()),
            (MS, 2, wake.clone()),
            (MS, 3, wake.clone()),
            (MS, 3, isolate(lru::INACTIVE_FILE, 5)),
            // pid 4 never reclaims directly: its wake-ups are in no row.
            (MS, 4, wake),
            // A wait by a task whose name contains kswapd is kswapd's.
            (MS, 5, TraceRec::WaitIffCongested { usec_timeout: 100_000, usec_delayed: 0 }),
            (MS, 4, TraceRec::WaitIffCongested { usec_timeout: 100_000, usec_delayed: 0 }),
        ]);
        let comms = ["", "", "dd_copy", "xx_copy", "writer", "kswapd1"];
        let sum = st.summary(&|pid| comms[pid as usize].to_string(), 2 * MS);
        assert_eq!(sum["vmscan"]["direct_reclaims"], 1);
        assert_eq!(sum["vmscan"]["wake_kswapd_requests"], 2, "'dd_copy' and 'xx_copy' are both 'copy'");
        assert_eq!(sum["vmscan"]["direct_pages_scanned"], 5);
        assert_eq!(sum["vmscan"]["kswapd_wakeups"], 0);
        assert_eq!(sum["congestion_wait"]["kswapd"]["conditional_waited"], 1);
        assert_eq!(sum["congestion_wait"]["direct"]["conditional_waited"], 1);
        assert_eq!(sum["vmscan"]["direct_stall_us"], 0, "a reclaim still running at the end has no latency");
        assert_eq!(sum["vmscan"]["direct_reclaims_open"], 1);
        assert_eq!(sum["latency"]["direct_stall"]["count"], 0);
        assert_eq!(sum["latency"]["wait_iff_congested"]["count"], 2);
        assert_eq!(sum["latency"]["wait_iff_congested"]["log2_us"][0], 2, "waits of 0 us go in bin 0");
    }

    #[test]
    fn script_names() {
        assert_eq!(script_name("fs_mark"), "mark");
        assert_eq!(script_name("kswapd0"), "kswapd0");
        assert_eq!(script_name("flush-8:0"), "0");
        assert_eq!(script_name("dd-copy"), "dd-copy");
        assert_eq!(script_name("x_"), "");
        assert_eq!(script_name("Web Content"), "Content");
    }

    #[test]
    fn stats_without_a_file_and_beside_a_filtered_one() {
        let mut t = Tracer::disabled().with_stats(Era::V30);
        assert!(Tp::ALL.iter().all(|&tp| t.on(tp)), "the statistics need every event");
        t.emit(T, "x", 2, 0, &samples()[3]);
        assert_eq!(t.stats().unwrap().task(2).direct_begin, 1);
        assert_eq!(t.finish().unwrap(), 0);
        assert!(Tracer::disabled().with_stats(Era::V2618).stats().is_none(), "2.6.18 has no tracepoints");
        assert!(Tracer::disabled().stats().is_none());

        let p = TempPath::new("stats");
        let events = vec!["mm_vmscan_kswapd_wake".to_string()];
        let mut t = Tracer::to_file(p.as_str(), Some(&events), TraceFormat::Kernel, Era::V30).unwrap().with_stats(Era::V30);
        for rec in samples() {
            t.emit(T, "x", 2, 0, &rec);
        }
        assert_eq!(t.finish().unwrap(), 1, "only the chosen event is written");
        assert_eq!(t.stats().unwrap().task(2).direct_begin, 1, "but every event is counted");
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
        let err = Tracer::to_file(p.as_str(), Some(&events), TraceFormat::Kernel, Era::V30).unwrap_err();
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
        let err = Tracer::to_file(p.as_str(), Some(&events), TraceFormat::Kernel, Era::V2618).unwrap_err();
        assert_eq!(err.field, "trace.events[0]");
        assert!(err.message.contains("does not exist in kernel 2.6.18"), "{err}");
        assert!(err.message.contains("2.6.36"), "{err}");
        let err = Tracer::to_file(p.as_str(), None, TraceFormat::Kernel, Era::V2618).unwrap_err();
        assert_eq!(err.field, "trace");
        assert!(err.message.contains("2.6.18 has no tracepoints"), "{err}");
        let err = Tracer::to_file(p.as_str(), Some(&["bogus".to_string()]), TraceFormat::Kernel, Era::V2618).unwrap_err();
        assert_eq!(err.field, "trace.events[0]");
        assert!(!p.0.exists());
    }

    #[test]
    fn uncreatable_path_is_a_path_error() {
        let err = Tracer::to_file("/nonexistent-dir-mmtwin/trace.txt", None, TraceFormat::Kernel, Era::V30).unwrap_err();
        assert_eq!(err.field, "trace.path");
        assert!(err.message.contains("/nonexistent-dir-mmtwin/trace.txt"), "{err}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn write_errors_surface_in_finish() {
        if !std::path::Path::new("/dev/full").exists() {
            return;
        }
        let mut t = Tracer::to_file("/dev/full", None, TraceFormat::Kernel, Era::V30).unwrap();
        t.emit(T, "x", 1, 0, &TraceRec::KswapdSleep { nid: 0 });
        let err = t.finish().unwrap_err();
        assert_eq!(err.field, "trace.path");
    }
}
