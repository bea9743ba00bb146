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
}

/// Allocation groups of the model filesystem. A simplification of ext4's
/// block groups (128 MiB each, gathered 16 at a time into flex groups) and
/// xfs's allocation groups: the filesystem is cut into this many regions,
/// each directory's files are allocated in the region `dir % GROUPS`, and
/// each region starts with its inode table. This is xfs's rule (a file's
/// blocks in its inode's allocation group) and near ext3's. It is not
/// 3.0 ext4's: mballoc allocates a file larger than 16 blocks as a stream,
/// a new file's first extent (and any extent that cannot continue the
/// last) in the group of the filesystem's last allocation, in 8 MiB
/// windows of the file preallocated at once, so concurrently written
/// files sit next to each other whatever their directories; the model's
/// ext4 seeks more between directories than 3.0's would. Modelling it
/// needs the preallocation windows as well as the stream
/// (docs/calibration.md, "mballoc").
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

    /// The group a directory's inodes and files go to.
    pub fn group_of_dir(&self, dir: u32) -> u32 {
        (dir as u64 % self.cursor.len() as u64) as u32
    }

    /// ext4's block group (128 MiB: one 4 KiB bitmap block of 32768 bits)
    /// of a block, in pages: whose block bitmap an allocation there changes.
    pub fn bitmap_of_block(&self, block: u64, page_size: u64) -> u32 {
        (block * page_size >> 27) as u32
    }

    /// Where the next blocks of a file in directory `dir` go.
    pub fn next_block(&self, dir: u32) -> u64 {
        self.cursor[self.group_of_dir(dir) as usize]
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
    /// Blocks come contiguous after the inode's last extent when that is
    /// the group's cursor, else at the group's cursor.
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
        let groups = self.cursor.len() as u64;
        let g = (self.inodes[ino as usize].dir as u64 % groups) as usize;
        let mut block = self.cursor[g];
        let group_end = (g as u64 + 1) * self.group_pages;
        if block + n > group_end {
            // The group is full: wrap to its start (blocks of deleted files
            // are reused; the model does not track free extents), past the
            // journal in the group that holds it.
            block = g as u64 * self.group_pages + self.itable;
            if let Some((start, pages)) = self.journal_log {
                if start == block {
                    block += pages;
                }
            }
        }
        self.cursor[g] = block + n;
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
        let per: u64 = self.inodes.iter().map(|i| (i.radix.capacity() * 4 + i.dirty_chunks.capacity() * 8 + i.extents.capacity() * 24) as u64).sum();
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
        }
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
        // ext4: pages 50..60 are written first, then a run from 0 asks for
        // 200: it stops at page 50, which keeps its block; 60.. come later.
        let mut f = fs(FsKind::Ext4);
        let ino = f.new_inode(0);
        f.inodes[ino as usize].size = 300;
        assert_eq!(f.alloc_blocks(ino, 50, 10), 512);
        assert_eq!(f.alloc_blocks(ino, 0, 200), 522);
        // Until 2026-11-22 bmap searched backwards and stopped at the first
        // extent ending before the page: page 50 read as a hole here.
        assert_eq!((f.bmap(ino, 49), f.bmap(ino, 50), f.bmap(ino, 59), f.bmap(ino, 60)), (571, 512, 521, NO_BLOCK));
        assert_eq!(f.alloc_blocks(ino, 60, 240), 572);
        assert_eq!(f.inodes[ino as usize].extents, vec![(0, 522, 50), (50, 512, 10), (60, 572, 240)]);
        assert_eq!(f.blocks_used, 300);
    }
}
