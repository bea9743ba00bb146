//! struct page, struct-of-arrays: 14 hot bytes per simulated page (flags,
//! order, migrate type, list links) and 12 cold bytes in side tables (the
//! owner: an inode or an mm, the page's index in it, and page->private).
//!
//! A page is on at most one list at a time (buddy free list, per-cpu list,
//! LRU list or a reclaimer's private list), exactly like the kernel's
//! `page->lru`, so one pair of link arrays serves every list.

pub const NIL: u32 = u32::MAX;

// Page flags (a subset of the kernel's, under its names), 32 bits.
/// Head of a free buddy block (PageBuddy); `order` holds the block order.
pub const PG_BUDDY: u32 = 1 << 0;
/// On a per-cpu page list (free, not counted in the zone's free pages).
pub const PG_PCP: u32 = 1 << 1;
/// On an LRU list (PageLRU).
pub const PG_LRU: u32 = 1 << 2;
/// On an active LRU list (PageActive).
pub const PG_ACTIVE: u32 = 1 << 3;
/// Reserved at boot (PageReserved): kernel text, mem_map.
pub const PG_RESERVED: u32 = 1 << 4;
/// Allocated to the kernel itself (page tables).
pub const PG_KERNEL: u32 = 1 << 5;
/// Swap-backed (PageSwapBacked): anonymous memory and shmem.
pub const PG_SWAPBACKED: u32 = 1 << 6;
/// Held in a per-cpu pagevec on its way to an LRU list.
pub const PG_PAGEVEC: u32 = 1 << 7;
/// Tail page of a free buddy block (not a head): covered by a PG_BUDDY head.
pub const PG_BUDDY_TAIL: u32 = 1 << 8;
/// PG_referenced: seen by mark_page_accessed or by a reclaim pass.
pub const PG_REFERENCED: u32 = 1 << 9;
/// PG_dirty.
pub const PG_DIRTY: u32 = 1 << 10;
/// PG_writeback: an I/O is in flight for this page.
pub const PG_WRITEBACK: u32 = 1 << 11;
/// PG_reclaim: rotate to the inactive tail when writeback ends.
pub const PG_RECLAIM: u32 = 1 << 12;
/// Mapped into a process's page tables (page_mapped, mapcount 1).
pub const PG_MAPPED: u32 = 1 << 13;
/// PG_locked (the page lock: a read in flight, or held by reclaim).
pub const PG_LOCKED: u32 = 1 << 14;
/// PG_unevictable.
pub const PG_UNEVICTABLE: u32 = 1 << 15;
/// Isolated from the LRU by reclaim (on a private list).
pub const PG_ISOLATED: u32 = 1 << 16;
/// A slab page (reclaimable caches: inodes, dentries).
pub const PG_SLAB: u32 = 1 << 17;
/// In the page cache of a file (page->mapping is an inode).
pub const PG_FILE: u32 = 1 << 18;
/// The pte's young (accessed) bit, set by a user access, cleared by
/// page_referenced.
pub const PG_YOUNG: u32 = 1 << 19;
/// PG_uptodate: the page's contents are valid.
pub const PG_UPTODATE: u32 = 1 << 20;
/// Anonymous (PageAnon: mapping is an anon_vma).
pub const PG_ANON: u32 = 1 << 21;
/// PG_swapcache: an anonymous page in the swap cache; `index` holds its swap slot.
pub const PG_SWAPCACHE: u32 = 1 << 22;
/// A faulting task holds a reference to the page (do_swap_page between the
/// read and the mapping): reclaim cannot free it (__remove_mapping fails).
pub const PG_FAULTREF: u32 = 1 << 23;
/// PG_private: the page has buffer heads attached (ext4 and xfs attach one
/// per block when a page is written or mkwrite-faulted); `private` holds
/// the buffer_head object.
pub const PG_PRIVATE: u32 = 1 << 24;
/// Engine bookkeeping, not a kernel flag: the page was read from disk
/// (readahead or a single read) and nobody has used it since (no fault
/// mapped it, no read(2) copied it). Reclaim freeing such a page counts
/// readahead thrashing (`sim.ra_unused_reclaimed`).
pub const PG_RA_UNUSED: u32 = 1 << 25;
/// Engine bookkeeping, not a kernel flag: a zero-filled page a readahead
/// window allocated for a hole, which nobody has used since. Reclaim
/// freeing one counts `sim.ra_holes_reclaimed`.
pub const PG_RA_HOLE: u32 = 1 << 26;

/// An intrusive list head: first, last, length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListHead {
    pub head: u32,
    pub tail: u32,
    pub len: u32,
}

impl Default for ListHead {
    fn default() -> Self {
        ListHead { head: NIL, tail: NIL, len: 0 }
    }
}

impl ListHead {
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A page's list links (page->lru), next and prev side by side: every
/// list operation reads or writes both, so they share a cache line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C, align(8))]
pub struct Link {
    pub next: u32,
    pub prev: u32,
}

const UNLINKED: Link = Link { next: NIL, prev: NIL };

/// Page state, one entry per page frame, indexed by pfn.
pub struct Pages {
    pub flags: Vec<u32>,
    pub order: Vec<u8>,
    pub mt: Vec<u8>,
    pub link: Vec<Link>,
    /// Cold: page->mapping, as an owner id (inode number for page-cache
    /// pages, mm id for anonymous pages, cache id for slab pages).
    pub owner: Vec<u32>,
    /// Cold: page->index (offset in the file or the mapping, in pages).
    pub index: Vec<u32>,
    /// Cold: page->private, the buffer_head object of a PG_PRIVATE page.
    pub private: Vec<u32>,
}

impl Pages {
    pub fn new(n: usize) -> Self {
        Pages {
            flags: vec![0; n],
            order: vec![0; n],
            mt: vec![0; n],
            link: vec![UNLINKED; n],
            owner: vec![NIL; n],
            index: vec![0; n],
            private: vec![NIL; n],
        }
    }

    pub fn len(&self) -> usize {
        self.flags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// Hot bytes of simulator state per page (flags, order, mt, links).
    pub const HOT_BYTES_PER_PAGE: usize = 4 + 1 + 1 + 4 + 4;
    /// Cold bytes per page in side tables (owner, index, private).
    pub const COLD_BYTES_PER_PAGE: usize = 4 + 4 + 4;
    /// All bytes of simulator state per page.
    pub const BYTES_PER_PAGE: usize = Self::HOT_BYTES_PER_PAGE + Self::COLD_BYTES_PER_PAGE;

    #[inline]
    pub fn test(&self, pfn: u32, f: u32) -> bool {
        self.flags[pfn as usize] & f != 0
    }
    #[inline]
    pub fn set(&mut self, pfn: u32, f: u32) {
        self.flags[pfn as usize] |= f;
    }
    #[inline]
    pub fn clear(&mut self, pfn: u32, f: u32) {
        self.flags[pfn as usize] &= !f;
    }
    /// Clear `f`, returning whether it was set (TestClearPage*).
    #[inline]
    pub fn test_clear(&mut self, pfn: u32, f: u32) -> bool {
        let was = self.flags[pfn as usize] & f != 0;
        self.flags[pfn as usize] &= !f;
        was
    }

    #[inline]
    pub fn push_front(&mut self, list: &mut ListHead, pfn: u32) {
        let p = pfn as usize;
        self.link[p] = Link { next: list.head, prev: NIL };
        if list.head != NIL {
            self.link[list.head as usize].prev = pfn;
        } else {
            list.tail = pfn;
        }
        list.head = pfn;
        list.len += 1;
    }

    #[inline]
    pub fn push_back(&mut self, list: &mut ListHead, pfn: u32) {
        let p = pfn as usize;
        self.link[p] = Link { next: NIL, prev: list.tail };
        if list.tail != NIL {
            self.link[list.tail as usize].next = pfn;
        } else {
            list.head = pfn;
        }
        list.tail = pfn;
        list.len += 1;
    }

    #[inline]
    pub fn unlink(&mut self, list: &mut ListHead, pfn: u32) {
        let p = pfn as usize;
        let Link { next: n, prev: pr } = self.link[p];
        if pr != NIL {
            self.link[pr as usize].next = n;
        } else {
            list.head = n;
        }
        if n != NIL {
            self.link[n as usize].prev = pr;
        } else {
            list.tail = pr;
        }
        self.link[p] = UNLINKED;
        list.len -= 1;
    }

    #[inline]
    pub fn pop_front(&mut self, list: &mut ListHead) -> Option<u32> {
        if list.head == NIL {
            return None;
        }
        let pfn = list.head;
        self.unlink(list, pfn);
        Some(pfn)
    }

    #[inline]
    pub fn pop_back(&mut self, list: &mut ListHead) -> Option<u32> {
        if list.tail == NIL {
            return None;
        }
        let pfn = list.tail;
        self.unlink(list, pfn);
        Some(pfn)
    }

    /// Iterate a list's pfns (for checks and reports; not the hot path).
    pub fn iter<'a>(&'a self, list: &ListHead) -> ListIter<'a> {
        ListIter { pages: self, cur: list.head }
    }
}

// Hot page state stays at or under 16 bytes a page (checked at compile time).
const _: () = assert!(Pages::HOT_BYTES_PER_PAGE <= 16);

pub struct ListIter<'a> {
    pages: &'a Pages,
    cur: u32,
}

impl Iterator for ListIter<'_> {
    type Item = u32;
    fn next(&mut self) -> Option<u32> {
        if self.cur == NIL {
            return None;
        }
        let c = self.cur;
        self.cur = self.pages.link[c as usize].next;
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_ops_keep_order_and_length() {
        let mut p = Pages::new(8);
        let mut l = ListHead::default();
        p.push_back(&mut l, 1);
        p.push_back(&mut l, 2);
        p.push_front(&mut l, 0);
        assert_eq!(p.iter(&l).collect::<Vec<_>>(), vec![0, 1, 2]);
        p.unlink(&mut l, 1);
        assert_eq!(p.iter(&l).collect::<Vec<_>>(), vec![0, 2]);
        assert_eq!(l.len, 2);
        assert_eq!(p.pop_front(&mut l), Some(0));
        assert_eq!(p.pop_front(&mut l), Some(2));
        assert_eq!(p.pop_front(&mut l), None);
        assert!(l.is_empty());
        assert_eq!((l.head, l.tail), (NIL, NIL));
    }
}
