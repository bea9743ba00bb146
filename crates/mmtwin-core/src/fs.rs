//! The filesystem layer, simple but real: inodes with their page-cache
//! radix roots and dirty state, block allocation at write time (ext3) or
//! at writeback time (delayed allocation, as both ext4 and xfs did), the
//! inode-table write that comes with a new file's first writeback, and how
//! each filesystem answers reclaim's ->writepage (ext3 writes; ext4 refuses
//! pages whose blocks are not yet allocated; xfs refuses direct reclaim but
//! writes for kswapd). ext4's journal is jbd2.rs.

use crate::spec::{FsKind, Spec};
use std::collections::VecDeque;

pub const NO_BLOCK: u64 = u64::MAX;

#[derive(Debug, Clone, Default)]
pub struct Inode {
    pub in_use: bool,
    /// Directory (allocation group) the inode lives in.
    pub dir: u32,
    /// i_size in pages.
    pub size: u64,
    /// Radix tree root: chunk ids of the page cache (filemap.rs).
    pub radix: Vec<u32>,
    /// One bit per radix chunk holding dirty pages (the dirty tag's upper level).
    pub dirty_chunks: Vec<u64>,
    pub nrpages: u64,
    pub nrdirty: u64,
    pub nrwriteback: u64,
    /// Pages of the inode put under writeback, and taken out of it, since
    /// it was created (jbd2's ordered-data wait counts on them).
    pub wb_started: u64,
    pub wb_ended: u64,
    /// Extents (file page index, first block, pages), sorted by index.
    pub extents: Vec<(u64, u64, u64)>,
    /// ext4: the inode's preallocations (i_prealloc_list), each a window
    /// (file page index, first block, pages) that mballoc set aside for
    /// the file, sorted by index; used blocks stay in them (pa_free is not
    /// needed: a page given a block is never asked for again).
    pub prealloc: Vec<(u64, u64, u64)>,
    /// ext4: i_reserved_data_blocks, the delayed-allocation pages (dirty,
    /// no block yet) whose blocks ext4_da_get_block_prep reserved.
    pub reserved: u64,
    /// i_writecount: open files with write access (get_write_access at
    /// open; a mapping keeps its file, and with it the count, until
    /// exit_mmap's last fput).
    pub i_writecount: u32,
    /// dirtied_when (ns) while on the bdi's dirty list.
    pub dirtied_when: u64,
    pub on_dirty_list: bool,
    /// file_ra_state.prev_pos of the open file reading this inode (bytes):
    /// where the last read() ended; u64::MAX (the kernel's -1) before the
    /// first read of an open. Every workload reads a file through one open
    /// file at a time, so it lives here.
    pub ra_prev_pos: u64,
    /// file_ra_state.mmap_miss: page faults that missed the cache, less
    /// those that hit (filemap_fault stops reading around past 100).
    pub mmap_miss: u32,
    /// The page the last fault on the file's mapping was for (u64::MAX:
    /// none yet); kept apart from the read() position.
    pub mmap_prev: u64,
    /// The last window read for the mapping, [start, end): a fault inside
    /// it that misses finds a page reclaimed before it was used.
    pub mmap_ra: (u64, u64),
    /// Lowest index that may still be dirty (write_cache_pages cursor).
    pub dirty_lo: u64,
    /// Open file descriptors and mappings, plus one for the dentry.
    pub i_count: u32,
    pub has_dentry: bool,
    pub dentry_obj: u32,
    pub inode_obj: u32,
    pub dcache_referenced: bool,
    pub i_referenced: bool,
    pub on_dentry_lru: bool,
    pub on_inode_lru: bool,
    pub unlinked: bool,
    /// Generation: bumped whenever the inode number is reused, so stale
    /// LRU entries are recognised.
    pub gen: u32,
    /// The inode table block is written with the first data writeback.
    pub itable_written: bool,
    pub mapped: bool,
}

pub struct Fs {
    pub kind: FsKind,
    /// Block device index of the filesystem.
    pub dev: usize,
    pub inodes: Vec<Inode>,
    free_inos: Vec<u32>,
    /// Per-group allocation cursor (blocks, in pages) and group size.
    cursor: Vec<u64>,
    group_pages: u64,
    /// Blocks at the start of each group kept for its inode table.
    itable: u64,
    pub blocks_total: u64,
    pub blocks_used: u64,
    /// Unused dentries and inodes (the dcache and icache LRUs), oldest at the front.
    pub dentry_lru: VecDeque<(u32, u32)>,
    pub inode_lru: VecDeque<(u32, u32)>,
    pub nr_unused_dentries: u64,
    pub nr_unused_inodes: u64,
    /// The jbd2 log (ext4 with a journal): its first block and size, in pages.
    pub journal_log: Option<(u64, u64)>,
    /// ext4: the group mballoc's stream allocation is filling
    /// (s_mb_last_group); None for the filesystems that place a file's
    /// blocks by its directory.
    stream: Option<usize>,
    /// Bytes a page (and a block) holds: mballoc's windows are in bytes.
    page_size: u64,
}

/// Allocation groups of the model filesystem. A simplification of ext4's
/// block groups (128 MiB each, gathered 16 at a time into flex groups) and
/// xfs's allocation groups: the filesystem is cut into this many regions,
/// each starting with its inode table; a directory's inodes live in region
/// `dir % GROUPS`.
///
/// Where a file's blocks go: xfs and ext3 allocate in the directory's
/// region (xfs: the inode's allocation group; ext3: near the inode's
/// block group). ext4 (3.0's mballoc, fs/ext4/mballoc.c) widens each
/// request to a window of the file (ext4_mb_normalize_request: 8 MiB
/// aligned windows for a file over 8 MiB) and keeps the window's blocks
/// for the file (an inode preallocation), so its later pages land in
/// place; a window goes right after the file's last extent when those
/// blocks are free (EXT4_MB_HINT_TRY_GOAL, merge to the left), and
/// otherwise, a new file's first included, where the filesystem's last
/// allocation was (stream allocation, EXT4_MB_STREAM_ALLOC: the group in
/// s_mb_last_group, filled from its free space on). So files written at
/// the same time sit window by window next to each other whatever their
/// directories ([`Fs::mb_new_blocks`]).
const GROUPS: u64 = 128;
/// Blocks at the start of each group kept for its inode table (2 MiB).
const ITABLE_PAGES: u64 = 512;

impl Fs {
    pub fn new(spec: &Spec) -> Fs {
        let (kind, dev, size_mib) = match &spec.machine.storage {
            Some(st) => (st.fs.kind, st.fs.device as usize, st.fs.size_mib),
            None => (FsKind::Ext4, 0, 0),
        };
        let blocks_total = size_mib * (1 << 20) / spec.machine.page_size;
        // Allocation groups: GROUPS of them, fewer on a filesystem too small
        // to give each at least 2 x ITABLE_PAGES blocks (at least one group).
        let groups = GROUPS.min(blocks_total / (ITABLE_PAGES * 2)).max(1);
        let group_pages = (blocks_total / groups).max(1);
        let itable = ITABLE_PAGES.min(group_pages / 2);
        let mut cursor: Vec<u64> = (0..groups).map(|g| g * group_pages + itable).collect();
        // The journal inode's blocks: mke2fs's default size for the
        // filesystem's size in 4 KiB blocks (ext2fs_default_journal_size:
        // 1024 blocks under 32768, 4096 under 256k, 8192 under 512k, 16384
        // under 1M, else 32768 = 128 MiB), in the data area of the middle
        // group, where no file's data goes (CHOSEN: the middle of the
        // filesystem, where mke2fs puts it in e2fsprogs 1.42 and later;
        // where the seeds' 2011 mke2fs put it is not checked).
        let journal_log = match &spec.machine.storage {
            Some(st) if st.fs.has_journal() => {
                let fs_blocks = size_mib * 256;
                let jblocks: u64 = match fs_blocks {
                    0..32_768 => 1024,
                    32_768..262_144 => 4096,
                    262_144..524_288 => 8192,
                    524_288..1_048_576 => 16_384,
                    _ => 32_768,
                };
                let g = (groups / 2) as usize;
                let pages = (jblocks * 4096 / spec.machine.page_size).min(group_pages.saturating_sub(itable) / 2).max(1);
                let start = cursor[g];
                cursor[g] += pages;
                Some((start, pages))
            }
            _ => None,
        };
        Fs {
            kind,
            dev,
            inodes: Vec::new(),
            free_inos: Vec::new(),
            cursor,
            group_pages,
            itable,
            blocks_total,
            blocks_used: 0,
            dentry_lru: VecDeque::new(),
            inode_lru: VecDeque::new(),
            nr_unused_dentries: 0,
            nr_unused_inodes: 0,
            journal_log,
            stream: (kind == FsKind::Ext4).then_some(0),
            page_size: spec.machine.page_size,
        }
    }

    /// Allocation groups.
    pub fn nr_groups(&self) -> usize {
        self.cursor.len()
    }

    /// The group a block (in pages) lies in.
    pub fn group_of_block(&self, block: u64) -> u32 {
        ((block / self.group_pages) as usize).min(self.cursor.len() - 1) as u32
    }

    /// The group a directory's inodes go to (and its files' blocks, but on ext4).
    pub fn group_of_dir(&self, dir: u32) -> u32 {
        (dir as u64 % self.cursor.len() as u64) as u32
    }

    /// ext4's block group (128 MiB: one 4 KiB bitmap block of 32768 bits)
    /// of a block, in pages: whose block bitmap an allocation there changes.
    pub fn bitmap_of_block(&self, block: u64, page_size: u64) -> u32 {
        (block * page_size >> 27) as u32
    }

    /// Where the blocks for page `index` of an inode would come from
    /// (whose bitmap and group descriptor the allocation will change):
    /// the inode's preallocation holding it (ext4); for ext4's tail of a
    /// file nobody writes (a request from `index` reaches i_size within
    /// one 8 MiB mapping), the goal's group (see [`Fs::mb_new_blocks`]);
    /// else where a new extent goes (ext4: the stream's group; else the
    /// directory's).
    pub fn alloc_hint(&self, ino: u32, index: u64) -> u64 {
        if let Some((b, _)) = self.mb_use_preallocated(ino, index) {
            return b;
        }
        let i = &self.inodes[ino as usize];
        let tail = i.i_writecount == 0 && i.size.saturating_sub(index) <= (8 << 20) / self.page_size;
        let g = match self.stream {
            Some(_) if tail => self.tail_group(ino, index),
            Some(s) => s,
            None => self.group_of_dir(i.dir) as usize,
        };
        self.cursor[g]
    }

    /// The group a file's tail allocation (NOPREALLOC) searches from:
    /// ext4_ext_find_goal's, the block after the file's extent left of
    /// `l`, or for a file without one (a small file written back whole)
    /// ext4_inode_to_goal_block's, the inode's own group (the model's
    /// directory group).
    fn tail_group(&self, ino: u32, l: u64) -> usize {
        let e = &self.inodes[ino as usize].extents;
        let k = e.partition_point(|x| x.0 <= l);
        match k.checked_sub(1) {
            Some(j) => self.group_of_block(e[j].1 + e[j].2) as usize,
            None => self.group_of_dir(self.inodes[ino as usize].dir) as usize,
        }
    }

    /// The inode number the next new_inode hands out.
    pub fn next_ino(&self) -> u32 {
        self.free_inos.last().copied().unwrap_or(self.inodes.len() as u32)
    }

    /// A new inode in directory `dir` (its slab objects are set by the caller).
    pub fn new_inode(&mut self, dir: u32) -> u32 {
        let ino = match self.free_inos.pop() {
            Some(i) => i,
            None => {
                self.inodes.push(Inode::default());
                (self.inodes.len() - 1) as u32
            }
        };
        let i = &mut self.inodes[ino as usize];
        let gen = i.gen.wrapping_add(1);
        *i = Inode { in_use: true, dir, i_count: 1, gen, ra_prev_pos: u64::MAX, mmap_prev: u64::MAX, ..Default::default() };
        ino
    }

    /// Forget an inode whose pages and objects are gone.
    pub fn destroy_inode(&mut self, ino: u32) {
        let i = &mut self.inodes[ino as usize];
        let freed: u64 = i.extents.iter().map(|e| e.2).sum();
        self.blocks_used -= freed.min(self.blocks_used);
        let gen = i.gen.wrapping_add(1);
        *i = Inode { gen, ..Default::default() };
        self.free_inos.push(ino);
    }

    /// The block of page `index`, or NO_BLOCK if delayed allocation has
    /// not given it one yet. Extents are kept sorted by file index and do
    /// not overlap: a binary search (the extent tree's lookup).
    pub fn bmap(&self, ino: u32, index: u64) -> u64 {
        let e = &self.inodes[ino as usize].extents;
        let k = e.partition_point(|x| x.0 <= index);
        match k.checked_sub(1).map(|k| e[k]) {
            Some((start, block, len)) if index < start + len => block + (index - start),
            _ => NO_BLOCK,
        }
    }

    /// Delayed allocation at writeback: blocks for pages `index..index+n`
    /// of an inode, the run the flusher writes from `index` (ext4's
    /// `ext4_da_writepages`; xfs's flusher too); see [`Fs::alloc_range`].
    pub fn alloc_blocks(&mut self, ino: u32, index: u64, n: u64) -> u64 {
        self.alloc_range(ino, index, index, index + n.max(1))
    }

    /// Blocks for the pages `lo..hi` around `index` (xfs's
    /// `xfs_iomap_write_allocate` converts the whole delayed extent holding
    /// the page, whoever asked for it), returning the block of `index`.
    /// Pages that have blocks are never given others: the range is clipped
    /// to the extents on either side (reclaim may have written a later page
    /// first), and to a group's size (then it starts at `index`).
    ///
    /// ext4: mballoc ([`Fs::mb_new_blocks`]). Else blocks come contiguous
    /// after the inode's last extent when that is the directory group's
    /// cursor, else at that cursor.
    pub fn alloc_range(&mut self, ino: u32, index: u64, lo: u64, hi: u64) -> u64 {
        debug_assert!(lo <= index && index < hi);
        let e = &self.inodes[ino as usize].extents;
        let k = e.partition_point(|x| x.0 <= index);
        debug_assert!(k == 0 || e[k - 1].0 + e[k - 1].2 <= index, "page {index} of inode {ino} has a block already");
        let lo = lo.max(k.checked_sub(1).map_or(0, |j| e[j].0 + e[j].2));
        let hi = hi.min(e.get(k).map_or(u64::MAX, |x| x.0));
        let cap = self.group_pages - self.itable;
        let (first, n) = if hi - lo <= cap { (lo, hi - lo) } else { (index, (hi - index).min(cap)) };
        let n = n.max(1);
        if self.stream.is_some() {
            return self.mb_new_blocks(ino, index, first, n);
        }
        let g = self.group_of_dir(self.inodes[ino as usize].dir) as usize;
        let block = self.group_take(g, n);
        self.blocks_used += n;
        let ext = &mut self.inodes[ino as usize].extents;
        let at = block + (index - first);
        if let Some(prev) = k.checked_sub(1).map(|k| &mut ext[k]) {
            if prev.0 + prev.2 == first && prev.1 + prev.2 == block {
                prev.2 += n;
                return at;
            }
        }
        ext.insert(k, (first, block, n));
        at
    }

    /// `n` blocks at group `g`'s cursor. A full group wraps to its start
    /// (blocks of deleted files are reused; the model does not track free
    /// extents), past the journal in the group that holds it.
    fn group_take(&mut self, g: usize, n: u64) -> u64 {
        let mut block = self.cursor[g];
        if block + n > (g as u64 + 1) * self.group_pages {
            block = g as u64 * self.group_pages + self.itable;
            if let Some((start, pages)) = self.journal_log {
                if start == block {
                    block += pages;
                }
            }
        }
        self.cursor[g] = block + n;
        block
    }

    /// ext4_mb_new_blocks (3.0's mballoc) for the pages `first..first+n`
    /// of a file, as ext4_da_writepages asks for them; returns the block
    /// of `index`. Piece by piece:
    /// - ext4_mb_use_preallocated: a page inside one of the inode's
    ///   preallocations takes its block there, up to the window's end;
    /// - otherwise ext4_mb_normalize_request widens the request to a
    ///   window ([`Fs::mb_normalize_request`]), the regular allocator
    ///   finds the window's blocks ([`Fs::mb_regular_allocator`]) and
    ///   ext4_mb_new_inode_pa keeps them for the file; the piece takes
    ///   what it needs from it.
    ///
    /// A request that crosses a window's end gets the rest from the next
    /// window; 3.0 maps the first part, redirties the rest
    /// (mpage_da_submit_io) and maps it on ext4_da_writepages' next pass.
    /// The tail of a file nobody writes is allocated exactly (see the
    /// code). The windows of such a file are let go once none of its
    /// pages waits for a block ([`Fs::da_update_reserve_space`]).
    ///
    /// Not modelled: files of at most 16 blocks take their blocks from a
    /// per-CPU locality group (ext4_mb_group_or_file), here a window of
    /// their own; ext4_release_file's discard when a closing file has no
    /// delayed blocks left; merging a window to the right of its request
    /// (only when a file's later pages got blocks first); the buddy
    /// allocator's placement inside a group (a power-of-two request takes
    /// the first free chunk aligned to its size, ext4_mb_simple_scan_group;
    /// here the group's cursor) and its reuse of freed blocks (a
    /// discarded window's among them: the model's groups fill from a
    /// cursor and wrap).
    fn mb_new_blocks(&mut self, ino: u32, index: u64, first: u64, n: u64) -> u64 {
        let mut at = NO_BLOCK;
        let mut l = first;
        let end = first + n;
        while l < end {
            let (block, take) = match self.mb_use_preallocated(ino, l) {
                Some((b, pa_end)) => (b, pa_end.min(end) - l),
                None if end == self.inodes[ino as usize].size && self.inodes[ino as usize].i_writecount == 0 => {
                    // ext4_mb_group_or_file: a request that ends at i_size
                    // of a file nobody has open for writing is the file's
                    // tail: EXT4_MB_HINT_NOPREALLOC, exactly what it asks
                    // for, no window and no stream (ext4_fs_is_busy, which
                    // would veto this under group-lock contention, is not
                    // modelled), from the free space of the goal's group
                    // (tail_group).
                    let g = self.tail_group(ino, l);
                    (self.group_take(g, end - l), end - l)
                }
                None => {
                    let (ws, wl, goal) = self.mb_normalize_request(ino, l, end - l);
                    let p = self.mb_regular_allocator(wl, goal);
                    let pa = &mut self.inodes[ino as usize].prealloc;
                    let at = pa.partition_point(|x| x.0 < ws);
                    pa.insert(at, (ws, p, wl));
                    (p + (l - ws), (ws + wl).min(end) - l)
                }
            };
            self.insert_extent(ino, l, block, take);
            if l <= index && index < l + take {
                at = block + (index - l);
            }
            l += take;
        }
        self.blocks_used += n;
        at
    }

    /// ext4's delayed-allocation reservation (i_reserved_data_blocks),
    /// kept as the count of the inode's dirty pages without a block, as
    /// page-writeback's dirty accounting calls in (`dirtied`: a page of
    /// the inode became dirty, else it stopped being dirty): a page that
    /// becomes dirty without a block was reserved for by
    /// ext4_da_get_block_prep; one that stops being dirty without one is
    /// cancelled with the page (truncate: ext4_da_page_release_reservation)
    /// or redirtied at once (reclaim's refused ->writepage). Allocation at
    /// writeback takes the rest ([`Fs::da_update_reserve_space`]).
    pub fn da_reserve(&mut self, ino: u32, idx: u64, dirtied: bool) {
        if self.kind != FsKind::Ext4 || self.bmap(ino, idx) != NO_BLOCK {
            return;
        }
        let i = &mut self.inodes[ino as usize];
        if dirtied {
            i.reserved += 1;
        } else {
            i.reserved -= 1;
        }
    }

    /// ext4_da_update_reserve_space after `used` delayed pages of an inode
    /// got their blocks: the reservation shrinks, and once no page of the
    /// file waits for a block and nobody has it open for writing, its
    /// preallocations go (ext4_discard_preallocations; the model does not
    /// reuse their free blocks).
    pub fn da_update_reserve_space(&mut self, ino: u32, used: u64) {
        let i = &mut self.inodes[ino as usize];
        debug_assert!(i.reserved >= used, "inode {ino}: {used} pages allocated, {} reserved", i.reserved);
        i.reserved -= used.min(i.reserved);
        if i.reserved == 0 && i.i_writecount == 0 {
            i.prealloc.clear();
        }
    }

    /// The block of page `index` in a preallocation of the inode that
    /// holds it, and the window's end (file page index).
    fn mb_use_preallocated(&self, ino: u32, index: u64) -> Option<(u64, u64)> {
        let pa = &self.inodes[ino as usize].prealloc;
        let k = pa.partition_point(|x| x.0 <= index);
        let (ls, ps, len) = *pa.get(k.checked_sub(1)?)?;
        (index < ls + len).then_some((ps + (index - ls), ls + len))
    }

    /// ext4_mb_normalize_request for a request of `len` pages at `l`:
    /// the window (first page, pages) the file gets, and the block right
    /// after the file's extent that ends where the window starts (the
    /// goal tried first: EXT4_MB_HINT_TRY_GOAL, merge to the left).
    ///
    /// The window's size comes from the larger of i_size and the
    /// request's end: up to 1 MiB, the next power of two from 16 KiB, from
    /// the file's start; then aligned windows of 2 MiB up to 4 MiB, 4 MiB
    /// up to 8 MiB, and 8 MiB past that (NRL_CHECK_SIZE with 3.0's
    /// max = 2 << blocksize_bits: with 4 KiB blocks every larger file gets
    /// 8 MiB windows, whatever the request). It is then cut back so it
    /// covers no allocated page and no other preallocation, and to a group.
    fn mb_normalize_request(&self, ino: u32, l: u64, len: u64) -> (u64, u64, Option<u64>) {
        const KIB: u64 = 1024;
        const MIB: u64 = 1024 * KIB;
        let ps = self.page_size;
        let inode = &self.inodes[ino as usize];
        let size = ((l + len) * ps).max(inode.size * ps);
        let max = 2 * ps;
        let nrl = |req: u64, size: u64, chunk: u64| req <= size || max <= chunk;
        let aligned = |shift: u32| ((l * ps) >> shift) << shift;
        let (start_b, size_b) = if size <= MIB {
            (0, size.next_power_of_two().max(16 * KIB))
        } else if nrl(size, 4 * MIB, 2 * KIB) {
            (aligned(21), 2 * MIB)
        } else if nrl(size, 8 * MIB, 4 * KIB) {
            (aligned(22), 4 * MIB)
        } else if nrl(len, (8 * MIB) / ps, 8 * KIB) {
            (aligned(23), 8 * MIB)
        } else {
            (l * ps, len * ps)
        };
        let mut start = start_b / ps;
        let mut end = start + (size_b / ps).max(1);
        // Not over allocated pages: lleft and lright, the nearest
        // allocated pages either side of the request.
        let e = &inode.extents;
        let k = e.partition_point(|x| x.0 <= l);
        let left = k.checked_sub(1).map(|j| e[j]);
        if let Some((ls, _, ln)) = left {
            start = start.max(ls + ln);
        }
        if let Some(&(rs, _, _)) = e.get(k) {
            end = end.min(rs);
        }
        // Not over the file's other preallocations.
        for &(ls, _, ln) in &inode.prealloc {
            if ls >= end || ls + ln <= start {
                continue;
            }
            if ls + ln <= l {
                start = ls + ln;
            } else if ls > l {
                end = ls;
            }
        }
        let cap = self.group_pages - self.itable;
        if end - start > cap {
            start = l;
            end = end.min(l + cap);
        }
        debug_assert!(start <= l && l < end);
        let goal = left.filter(|&(ls, _, ln)| ls + ln == start).map(|(_, pb, ln)| pb + ln);
        (start, end - start, goal)
    }

    /// The regular allocator's answer for a window of `n` blocks: the
    /// goal when the blocks there are free (the model: nothing was
    /// allocated after it, it is its group's cursor) and the window fits
    /// in the group; else, stream allocation (EXT4_MB_STREAM_ALLOC, files
    /// over 16 blocks), the group of the filesystem's last allocation
    /// (s_mb_last_group) from its free space on, or the next group when it
    /// has no room. The group found becomes the stream's.
    fn mb_regular_allocator(&mut self, n: u64, goal: Option<u64>) -> u64 {
        if let Some(goal) = goal {
            let g = self.group_of_block(goal) as usize;
            if self.cursor[g] == goal && goal + n <= (g as u64 + 1) * self.group_pages {
                self.cursor[g] += n;
                self.stream = Some(g);
                return goal;
            }
        }
        let mut g = self.stream.unwrap_or(0);
        if self.cursor[g] + n > (g as u64 + 1) * self.group_pages {
            g = (g + 1) % self.cursor.len();
            self.stream = Some(g);
        }
        self.group_take(g, n)
    }

    /// Record that pages `l..l+n` of an inode have blocks from `block` on,
    /// merged with the extents either side when contiguous on disk.
    fn insert_extent(&mut self, ino: u32, l: u64, block: u64, n: u64) {
        let ext = &mut self.inodes[ino as usize].extents;
        let k = ext.partition_point(|x| x.0 <= l);
        let prev = k > 0 && ext[k - 1].0 + ext[k - 1].2 == l && ext[k - 1].1 + ext[k - 1].2 == block;
        let next = k < ext.len() && ext[k].0 == l + n && ext[k].1 == block + n;
        match (prev, next) {
            (true, true) => {
                ext[k - 1].2 += n + ext[k].2;
                ext.remove(k);
            }
            (true, false) => ext[k - 1].2 += n,
            (false, true) => ext[k] = (l, block, n + ext[k].2),
            (false, false) => ext.insert(k, (l, block, n)),
        }
    }

    /// The inode table block of an inode (its group's table).
    pub fn itable_block(&self, ino: u32) -> u64 {
        let g = self.inodes[ino as usize].dir as u64 % self.cursor.len() as u64;
        g * self.group_pages + (ino as u64 / 16) % self.itable.max(1)
    }

    /// Does ->writepage called by reclaim write this page?
    /// ext3: always. ext4: not for a delayed-allocation page (no block yet).
    /// xfs: not from direct reclaim (PF_MEMALLOC without PF_KSWAPD).
    pub fn writepage_allowed(&self, ino: u32, index: u64, kswapd: bool) -> bool {
        match self.kind {
            // ext3_ordered_writepage: reclaim holds no journal handle, so
            // it writes (a page of a mapping without a block gets one).
            FsKind::Ext3 => true,
            FsKind::Ext4 => self.bmap(ino, index) != NO_BLOCK,
            FsKind::Xfs => kswapd,
        }
    }

    pub fn state_bytes(&self) -> u64 {
        let per: u64 = self.inodes.iter().map(|i| (i.radix.capacity() * 4 + i.dirty_chunks.capacity() * 8 + (i.extents.capacity() + i.prealloc.capacity()) * 24) as u64).sum();
        (self.inodes.len() * std::mem::size_of::<Inode>()) as u64 + per + (self.dentry_lru.len() + self.inode_lru.len()) as u64 * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(kind: FsKind) -> Fs {
        Fs {
            kind,
            dev: 0,
            inodes: Vec::new(),
            free_inos: Vec::new(),
            cursor: vec![512, 100_512],
            group_pages: 100_000,
            itable: 512,
            blocks_total: 200_000,
            blocks_used: 0,
            dentry_lru: VecDeque::new(),
            inode_lru: VecDeque::new(),
            nr_unused_dentries: 0,
            nr_unused_inodes: 0,
            journal_log: None,
            stream: (kind == FsKind::Ext4).then_some(0),
            page_size: 4096,
        }
    }

    #[test]
    fn ext4_streams_files_of_any_directory_in_windows_and_xfs_keeps_each_in_its_group() {
        // ext4: 100 pages (400 KiB) of a new file get a 512 KiB window
        // (128 pages) from the stream, whatever the directory; a file of
        // 99,300 pages gets 8 MiB windows (2048 pages), each right after
        // the last while the blocks there are free, then in the next group
        // when the stream's group has no room for a window. xfs: each file
        // in its directory's group (the last wraps to the group's start).
        for (kind, want) in [(FsKind::Ext4, [512, 640, 768, 896]), (FsKind::Xfs, [512, 100_512, 612, 512])] {
            let mut f = fs(kind);
            let a = f.new_inode(0);
            let b = f.new_inode(1);
            let c = f.new_inode(0);
            let d = f.new_inode(2);
            let got = [f.alloc_blocks(a, 0, 100), f.alloc_blocks(b, 0, 100), f.alloc_blocks(c, 0, 100), f.alloc_blocks(d, 0, 99_300)];
            assert_eq!(got, want, "{kind:?}");
            if kind == FsKind::Ext4 {
                assert_eq!(f.inodes[d as usize].extents, vec![(0, 896, 98_304), (98_304, 100_512, 996)]);
                assert_eq!(f.inodes[d as usize].prealloc.len(), 49);
                assert_eq!(f.inodes[d as usize].prealloc[48], (98_304, 100_512, 2048));
                assert_eq!(f.blocks_used, 99_600);
            }
        }
        // ext4: two files written back by turns stay contiguous, each in
        // its windows: 10 pages get 16 (64 KiB); the next 10 take 6 from
        // that window and 4 from a new one right after it (the goal: the
        // file's last block + 1, free); the other file's window comes
        // next, and the first file's third run is inside its second window.
        let mut f = fs(FsKind::Ext4);
        let (a, b) = (f.new_inode(0), f.new_inode(5));
        assert_eq!(f.alloc_blocks(a, 0, 10), 512);
        assert_eq!(f.alloc_blocks(a, 10, 10), 522);
        assert_eq!(f.inodes[a as usize].prealloc, vec![(0, 512, 16), (16, 528, 16)]);
        assert_eq!(f.alloc_blocks(b, 0, 10), 544);
        assert_eq!(f.alloc_blocks(a, 20, 10), 532);
        assert_eq!(f.inodes[a as usize].extents, vec![(0, 512, 30)]);
        assert_eq!(f.alloc_hint(a, 30), 542);
        assert_eq!(f.alloc_hint(a, 32), 560);
        // b's second run is in its own window too.
        assert_eq!(f.alloc_blocks(b, 10, 10), 554);
    }

    #[test]
    fn ext4_gives_the_tail_of_a_closed_file_exactly_its_blocks_and_lets_its_windows_go() {
        // A 10 MiB file (2560 pages) written back in two mappings (8 MiB,
        // then the rest): the first request is an 8 MiB window of its own.
        // Closed, the file's tail (its request ends at i_size) gets exactly
        // its 512 pages after the window, and the next file starts right
        // after; still open for writing, the tail gets a second 8 MiB
        // window and the next file starts 6 MiB further on.
        for (writers, next) in [(0, 512 + 2560), (1, 512 + 4096)] {
            let mut f = fs(FsKind::Ext4);
            let ino = f.new_inode(0);
            f.inodes[ino as usize].size = 2560;
            f.inodes[ino as usize].i_writecount = writers;
            f.inodes[ino as usize].reserved = 2560;
            assert_eq!(f.alloc_blocks(ino, 0, 2048), 512);
            f.da_update_reserve_space(ino, 2048);
            assert_eq!(f.inodes[ino as usize].prealloc, vec![(0, 512, 2048)]);
            assert_eq!(f.alloc_blocks(ino, 2048, 512), 512 + 2048);
            f.da_update_reserve_space(ino, 512);
            assert_eq!(f.inodes[ino as usize].extents, vec![(0, 512, 2560)]);
            // No page waits for a block: a file nobody writes lets its
            // preallocations go (ext4_da_update_reserve_space).
            let left: &[(u64, u64, u64)] = if writers == 0 { &[] } else { &[(0, 512, 2048), (2048, 2560, 2048)] };
            assert_eq!(f.inodes[ino as usize].prealloc, left, "writers {writers}");
            let other = f.new_inode(3);
            assert_eq!(f.alloc_blocks(other, 0, 100), next, "writers {writers}");
        }
        // A small file nobody writes, written back whole: its only request
        // is its tail, which goes to its inode's group (directory 1's
        // here: ext4_inode_to_goal_block), not to the stream.
        let mut f = fs(FsKind::Ext4);
        let ino = f.new_inode(1);
        f.inodes[ino as usize].size = 128;
        f.inodes[ino as usize].reserved = 128;
        assert_eq!(f.alloc_hint(ino, 0), 100_512);
        assert_eq!(f.alloc_blocks(ino, 0, 128), 100_512);
        f.da_update_reserve_space(ino, 128);
        assert!(f.inodes[ino as usize].prealloc.is_empty());
    }

    #[test]
    fn delayed_allocation_out_of_order() {
        // xfs: kswapd writes page 100 of a file whose pages 0..300 are
        // delayed; the whole extent gets its blocks, page 100 in its place.
        let mut f = fs(FsKind::Xfs);
        let ino = f.new_inode(0);
        f.inodes[ino as usize].size = 1000;
        assert_eq!(f.alloc_range(ino, 100, 0, 300), 612);
        assert_eq!(f.inodes[ino as usize].extents, vec![(0, 512, 300)]);
        assert_eq!((f.bmap(ino, 0), f.bmap(ino, 299), f.bmap(ino, 300)), (512, 811, NO_BLOCK));
        // A range reaching into allocated pages on both sides is clipped to the gap.
        assert_eq!(f.alloc_range(ino, 400, 400, 500), 812);
        assert_eq!(f.inodes[ino as usize].extents, vec![(0, 512, 300), (400, 812, 100)]);
        assert_eq!(f.alloc_range(ino, 350, 0, 1000), 912 + 50);
        assert_eq!(f.inodes[ino as usize].extents, vec![(0, 512, 300), (300, 912, 100), (400, 812, 100)]);
        // ext4: pages 50..60 of a 300-page file are written first: the
        // request is widened to the file's 2 MiB window (512 pages from
        // page 0), so every page gets its place in it whatever the order.
        let mut f = fs(FsKind::Ext4);
        let ino = f.new_inode(0);
        f.inodes[ino as usize].size = 300;
        assert_eq!(f.alloc_blocks(ino, 50, 10), 562);
        assert_eq!(f.inodes[ino as usize].prealloc, vec![(0, 512, 512)]);
        // A run from 0 asking for 200 stops at page 50, which keeps its block.
        assert_eq!(f.alloc_blocks(ino, 0, 200), 512);
        assert_eq!((f.bmap(ino, 49), f.bmap(ino, 50), f.bmap(ino, 59), f.bmap(ino, 60)), (561, 562, 571, NO_BLOCK));
        assert_eq!(f.alloc_blocks(ino, 60, 240), 572);
        assert_eq!(f.inodes[ino as usize].extents, vec![(0, 512, 300)]);
        assert_eq!(f.blocks_used, 300);
    }
}
