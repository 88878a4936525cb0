//! Wrapped lines cached per (message, width), so the chat pane lays out only
//! what changed: a frame renders the visible rows from cached lines, a
//! resize re-wraps each message once, and a finished highlight re-renders
//! only the messages that were waiting for it.
//!
//! Invariants: an entry is dropped when a highlight it waited for arrives
//! ([`WrapCache::highlights_arrived`]); the total number of cached lines
//! stays under the capacity by dropping the least recently used entries
//! (never the one just asked for). The cache does no rendering of its own:
//! the caller passes the render function. Owned by the UI task.

use super::Rendered;
use super::highlight::HighlightKey;
use ratatui::text::Line;
use std::collections::HashMap;
use std::sync::Arc;

/// The lines of one message at one width, shared with the frame that draws
/// them.
pub type CachedLines = Arc<[Line<'static>]>;

struct Entry {
    width: u16,
    lines: CachedLines,
    /// Code blocks drawn plain that are still being highlighted.
    waiting: Vec<HighlightKey>,
    used: u64,
}

/// A least-recently-used cache of wrapped lines keyed by a caller-chosen
/// message key and the width.
///
/// The key is the message id for text that no longer changes; for text that
/// does (a streaming reply) use [`super::content_hash`] of the text, or call
/// [`WrapCache::remove`] when it changes.
pub struct WrapCache {
    entries: HashMap<u64, Vec<Entry>>,
    capacity: usize,
    lines: usize,
    clock: u64,
}

impl std::fmt::Debug for WrapCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WrapCache")
            .field("messages", &self.entries.len())
            .field("lines", &self.lines)
            .field("capacity", &self.capacity)
            .finish()
    }
}

impl WrapCache {
    /// A cache holding up to about `capacity_lines` wrapped lines in total
    /// (a line costs roughly its text plus ~100 bytes).
    #[must_use]
    pub fn new(capacity_lines: usize) -> Self {
        Self {
            entries: HashMap::new(),
            capacity: capacity_lines.max(1),
            lines: 0,
            clock: 0,
        }
    }

    /// The cached lines of `key` at `width`, if present (marks them used).
    pub fn get(&mut self, key: u64, width: u16) -> Option<CachedLines> {
        self.clock += 1;
        let now = self.clock;
        let entry = self
            .entries
            .get_mut(&key)?
            .iter_mut()
            .find(|e| e.width == width)?;
        entry.used = now;
        Some(Arc::clone(&entry.lines))
    }

    /// The lines of `key` at `width`: from the cache, or made by `render`
    /// (given the width) and stored.
    pub fn get_or_render(
        &mut self,
        key: u64,
        width: u16,
        render: impl FnOnce(u16) -> Rendered,
    ) -> CachedLines {
        if let Some(lines) = self.get(key, width) {
            return lines;
        }
        let Rendered { lines, pending } = render(width);
        let lines: CachedLines = lines.into();
        self.lines += lines.len();
        let entry = Entry {
            width,
            lines: Arc::clone(&lines),
            waiting: pending,
            used: self.clock,
        };
        self.entries.entry(key).or_default().push(entry);
        if self.lines > self.capacity {
            self.evict(key, width);
        }
        lines
    }

    /// Drops every entry that drew one of `keys` plain, so the next frame
    /// renders those messages with their highlighting. Returns how many
    /// entries were dropped.
    pub fn highlights_arrived(&mut self, keys: &[HighlightKey]) -> usize {
        if keys.is_empty() {
            return 0;
        }
        let mut dropped = 0;
        let mut freed = 0;
        for list in self.entries.values_mut() {
            list.retain(|e| {
                let stale = e.waiting.iter().any(|k| keys.contains(k));
                if stale {
                    dropped += 1;
                    freed += e.lines.len();
                }
                !stale
            });
        }
        self.entries.retain(|_, list| !list.is_empty());
        self.lines -= freed;
        dropped
    }

    /// Forgets `key` at every width (its text changed).
    pub fn remove(&mut self, key: u64) {
        if let Some(list) = self.entries.remove(&key) {
            self.lines -= list.iter().map(|e| e.lines.len()).sum::<usize>();
        }
    }

    /// Forgets everything (e.g. the theme changed).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.lines = 0;
    }

    /// Lines held now.
    #[must_use]
    pub fn len_lines(&self) -> usize {
        self.lines
    }

    /// Drops the least recently used entries until the cache is at three
    /// quarters of its capacity (so eviction is rare), keeping `(key, width)`.
    fn evict(&mut self, key: u64, width: u16) {
        let mut ages: Vec<(u64, u64, u16)> = self
            .entries
            .iter()
            .flat_map(|(k, list)| list.iter().map(move |e| (e.used, *k, e.width)))
            .filter(|&(_, k, w)| (k, w) != (key, width))
            .collect();
        ages.sort_unstable();
        let target = self.capacity - self.capacity / 4;
        for (_, k, w) in ages {
            if self.lines <= target {
                break;
            }
            if let Some(list) = self.entries.get_mut(&k) {
                if let Some(i) = list.iter().position(|e| e.width == w) {
                    self.lines -= list[i].lines.len();
                    list.swap_remove(i);
                }
                if list.is_empty() {
                    self.entries.remove(&k);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rendered(n: usize, pending: &[u64]) -> Rendered {
        Rendered {
            lines: (0..n).map(|i| Line::from(i.to_string())).collect(),
            pending: pending.iter().map(|k| HighlightKey(*k)).collect(),
        }
    }

    #[test]
    fn a_hit_does_not_render_again() {
        let mut cache = WrapCache::new(100);
        let mut calls = 0;
        for _ in 0..3 {
            let lines = cache.get_or_render(1, 80, |_| {
                calls += 1;
                rendered(2, &[])
            });
            assert_eq!(lines.len(), 2);
        }
        assert_eq!(calls, 1);
        cache.get_or_render(1, 40, |w| rendered(usize::from(w / 10), &[]));
        assert_eq!(cache.len_lines(), 6, "another width is another entry");
    }

    #[test]
    fn an_arrived_highlight_drops_only_the_entries_waiting_for_it() {
        let mut cache = WrapCache::new(100);
        cache.get_or_render(1, 80, |_| rendered(3, &[7]));
        cache.get_or_render(2, 80, |_| rendered(3, &[8]));
        assert_eq!(cache.highlights_arrived(&[HighlightKey(7)]), 1);
        assert!(cache.get(1, 80).is_none());
        assert!(cache.get(2, 80).is_some());
        assert_eq!(cache.len_lines(), 3);
    }

    #[test]
    fn the_least_recently_used_go_first_when_full() {
        let mut cache = WrapCache::new(10);
        cache.get_or_render(1, 80, |_| rendered(4, &[]));
        cache.get_or_render(2, 80, |_| rendered(4, &[]));
        cache.get(1, 80);
        cache.get_or_render(3, 80, |_| rendered(4, &[]));
        assert!(cache.get(2, 80).is_none(), "2 was least recently used");
        assert!(cache.get(1, 80).is_some());
        assert!(cache.get(3, 80).is_some());
        assert!(cache.len_lines() <= 10);
        cache.remove(1);
        assert_eq!(cache.len_lines(), 4);
    }
}
