//! struct page, struct-of-arrays: 12 bytes per simulated page.
//!
//! A page is on at most one list at a time (buddy free list, per-cpu list or
//! LRU list), exactly like the kernel's `page->lru`, so one pair of link
//! arrays serves every list.

pub const NIL: u32 = u32::MAX;

// Page flags (a subset of the kernel's, under its names).
/// Head of a free buddy block (PageBuddy); `order` holds the block order.
pub const PG_BUDDY: u16 = 1 << 0;
/// On a per-cpu page list (free, not counted in the zone's free pages).
pub const PG_PCP: u16 = 1 << 1;
/// On an LRU list (PageLRU).
pub const PG_LRU: u16 = 1 << 2;
/// On the active LRU list (PageActive).
pub const PG_ACTIVE: u16 = 1 << 3;
/// Reserved at boot (PageReserved): kernel text, mem_map.
pub const PG_RESERVED: u16 = 1 << 4;
/// Allocated to the kernel itself (page tables).
pub const PG_KERNEL: u16 = 1 << 5;
/// Anonymous, swap-backed (PageSwapBacked / PageAnon).
pub const PG_ANON: u16 = 1 << 6;
/// Held in a per-cpu pagevec on its way to an LRU list.
pub const PG_PAGEVEC: u16 = 1 << 7;
/// Tail page of a free buddy block (not a head): covered by a PG_BUDDY head.
pub const PG_BUDDY_TAIL: u16 = 1 << 8;

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

/// Page state, one entry per page frame, indexed by pfn.
pub struct Pages {
    pub flags: Vec<u16>,
    pub order: Vec<u8>,
    pub mt: Vec<u8>,
    pub next: Vec<u32>,
    pub prev: Vec<u32>,
}

impl Pages {
    pub fn new(n: usize) -> Self {
        Pages {
            flags: vec![0; n],
            order: vec![0; n],
            mt: vec![0; n],
            next: vec![NIL; n],
            prev: vec![NIL; n],
        }
    }

    pub fn len(&self) -> usize {
        self.flags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// Bytes of simulator state per page.
    pub const BYTES_PER_PAGE: usize = 2 + 1 + 1 + 4 + 4;

    #[inline]
    pub fn push_front(&mut self, list: &mut ListHead, pfn: u32) {
        let p = pfn as usize;
        self.prev[p] = NIL;
        self.next[p] = list.head;
        if list.head != NIL {
            self.prev[list.head as usize] = pfn;
        } else {
            list.tail = pfn;
        }
        list.head = pfn;
        list.len += 1;
    }

    #[inline]
    pub fn push_back(&mut self, list: &mut ListHead, pfn: u32) {
        let p = pfn as usize;
        self.next[p] = NIL;
        self.prev[p] = list.tail;
        if list.tail != NIL {
            self.next[list.tail as usize] = pfn;
        } else {
            list.head = pfn;
        }
        list.tail = pfn;
        list.len += 1;
    }

    #[inline]
    pub fn unlink(&mut self, list: &mut ListHead, pfn: u32) {
        let p = pfn as usize;
        let (n, pr) = (self.next[p], self.prev[p]);
        if pr != NIL {
            self.next[pr as usize] = n;
        } else {
            list.head = n;
        }
        if n != NIL {
            self.prev[n as usize] = pr;
        } else {
            list.tail = pr;
        }
        self.next[p] = NIL;
        self.prev[p] = NIL;
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

    /// Iterate a list's pfns (for checks and reports; not the hot path).
    pub fn iter<'a>(&'a self, list: &ListHead) -> ListIter<'a> {
        ListIter { pages: self, cur: list.head }
    }
}

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
        self.cur = self.pages.next[c as usize];
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
