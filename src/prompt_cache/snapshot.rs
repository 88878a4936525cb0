//! A request's cacheable blocks as a hash chain ([`snapshot`]).

use crate::domain::{
    BlockHash, BlockKind, CacheRule, ChatRequest, Message, MessageId, MessageKind, PrefixBlock,
    PrefixSnapshot, RequestMessage, Role, SystemPrompt, Tier,
};
use crate::pipeline::ReportEntry;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ops::Range;

/// Content hashes of messages sent whole, remembered per process. A key
/// names the stored message a request message starts with, how many stored
/// messages it holds, its byte length and its tool calls; stored content
/// never changes (strata stores rewrites as new rows), and a message the
/// pipeline cut differently has another length.
///
/// It also keeps the keys and chains of the last request it hashed, so a
/// message block at the same position with the same key after the same
/// chain takes its chain from there: a request that repeats the previous
/// one and adds a turn costs a key comparison per block.
#[derive(Clone, Debug, Default)]
pub struct BlockHashes {
    by_key: HashMap<Key, BlockHash>,
    last: Vec<(Option<Key>, BlockHash)>,
}

/// What names a message block's content (see [`BlockHashes`]).
type Key = (MessageId, usize, usize, usize);

impl BlockHashes {
    /// An empty map.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn message(&mut self, key: Option<Key>, m: &RequestMessage) -> BlockHash {
        match key {
            Some(key) => *self.by_key.entry(key).or_insert_with(|| message_hash(m)),
            None => message_hash(m),
        }
    }

    /// Hashes remembered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether none are.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }
}

/// What [`snapshot`] reads: the request as the pipeline prepared it and
/// what the pipeline said of it.
pub struct SnapshotInput<'a> {
    /// The request.
    pub request: &'a ChatRequest,
    /// The pipeline's report, one entry per message of `messages`.
    pub report: &'a [ReportEntry],
    /// Per request message, the input messages it holds (`Prepared.sources`).
    pub sources: &'a [Range<usize>],
    /// The pipeline's input messages (the session's active ones).
    pub messages: &'a [Message],
    /// The frozen prompt the request's system text starts with.
    pub prompt: &'a SystemPrompt,
    /// Tokens of the tools array.
    pub tool_tokens: u64,
    /// Tokens of the system prompt as the request's figures count it (its
    /// text and its message framing): the layers' own counts, with the last
    /// system block taking the difference, so the blocks add up to the
    /// request's estimate.
    pub system_tokens: u64,
    /// The provider's rule (decides where cache markers sit).
    pub rule: CacheRule,
    /// Now, unix milliseconds.
    pub now_ms: i64,
}

/// The cacheable blocks of `input.request`: the tools array (when there
/// is one), one block per layer of the frozen prompt (and one for system
/// text beyond it), one per request message; each block's chain hashes its
/// content onto the previous chain.
pub fn snapshot(input: &SnapshotInput<'_>, hashes: &mut BlockHashes) -> PrefixSnapshot {
    let mut blocks = Vec::with_capacity(input.request.messages.len() + input.prompt.layers.len() + 1);
    let mut chain: BlockHash = 0;
    let mut push = |kind: BlockKind, hash: BlockHash, tokens: u32, blocks: &mut Vec<PrefixBlock>| {
        chain = link(chain, hash);
        blocks.push(PrefixBlock { kind, chain, tokens });
    };
    let last = std::mem::take(&mut hashes.last);
    let mut keys: Vec<(Option<Key>, BlockHash)> = Vec::with_capacity(last.len() + 2);
    if !input.request.tools.is_empty() {
        let hash = bytes_hash(
            serde_json::to_string(&input.request.tools)
                .unwrap_or_default()
                .as_bytes(),
        );
        let tokens = u32::try_from(input.tool_tokens).unwrap_or(u32::MAX);
        push(BlockKind::Tools, hash, tokens, &mut blocks);
    }
    let system = &input.request.system.text;
    let prompt = &input.prompt.text;
    let mut system_end = 0;
    if system.starts_with(prompt.as_str()) {
        for layer in &input.prompt.layers {
            let Some(text) = system.get(layer.start..layer.end) else {
                continue;
            };
            let tokens = u32::try_from(layer.tokens).unwrap_or(u32::MAX);
            push(
                BlockKind::Layer { layer: layer.name },
                bytes_hash(text.as_bytes()),
                tokens,
                &mut blocks,
            );
            system_end = layer.end;
        }
    }
    if system.len() > system_end {
        push(
            BlockKind::SystemExtra,
            bytes_hash(&system.as_bytes()[system_end..]),
            0,
            &mut blocks,
        );
    }
    let system_blocks = blocks.len();
    keys.extend(blocks.iter().map(|b| (None, b.chain)));
    let first_system = usize::from(!input.request.tools.is_empty());
    if system_blocks > first_system {
        let others: u64 = blocks[first_system..system_blocks - 1]
            .iter()
            .map(|b| u64::from(b.tokens))
            .sum();
        let last = input.system_tokens.saturating_sub(others);
        blocks[system_blocks - 1].tokens = u32::try_from(last).unwrap_or(u32::MAX);
    }
    for (k, m) in input.request.messages.iter().enumerate() {
        let range = input.sources.get(k).cloned().unwrap_or(0..0);
        let first = input.messages.get(range.start).filter(|_| !range.is_empty());
        let key = first.map(|f| (f.id, range.len(), m.content.len(), m.tool_calls.len()));
        let tokens: u32 = input
            .report
            .get(range.clone())
            .map_or(0, |r| r.iter().map(|e| e.tokens_after).sum());
        let kind = BlockKind::Message {
            message_id: first.map(|f| f.id),
            role: m.role,
            parts: u32::from(!m.content.is_empty()) + u32::try_from(m.tool_calls.len()).unwrap_or(u32::MAX),
            summary: first.is_some_and(|f| f.kind == MessageKind::Summary),
        };
        let i = blocks.len();
        let before = i.checked_sub(1).map_or(0, |k| blocks[k].chain);
        let same = key.is_some()
            && last.get(i).is_some_and(|(k, _)| *k == key)
            && i.checked_sub(1)
                .is_none_or(|k| last.get(k).is_some_and(|(_, c)| *c == before));
        if same {
            // The previous request had this block here after the same
            // prefix: its chain is the same.
            blocks.push(PrefixBlock {
                kind,
                chain: last[i].1,
                tokens,
            });
        } else {
            let hash = hashes.message(key, m);
            blocks.push(PrefixBlock {
                kind,
                chain: link(before, hash),
                tokens,
            });
        }
        keys.push((key, blocks[i].chain));
    }
    hashes.last = keys;
    let markers = match input.rule {
        CacheRule::Anthropic { .. } => anthropic_markers(input.prompt, &blocks, system_blocks),
        _ => Vec::new(),
    };
    PrefixSnapshot {
        model: input.request.model.clone(),
        at_ms: input.now_ms,
        prompt_version: input.prompt.version,
        blocks,
        markers,
    }
}

/// Where strata's Anthropic request carries `cache_control` (see
/// `provider::anthropic::wire`): after the system prompt's cached tiers and
/// after the whole system prompt (or after the tools when there is no
/// system prompt), and after the last block of each of the last two turns
/// (a turn: consecutive messages of one Anthropic role; tool results are
/// `user`).
fn anthropic_markers(prompt: &SystemPrompt, blocks: &[PrefixBlock], system_blocks: usize) -> Vec<usize> {
    let mut markers = Vec::new();
    let cached_tiers = blocks[..system_blocks].iter().rposition(|b| match b.kind {
        BlockKind::Layer { layer } => layer.tier() != Tier::Volatile,
        _ => false,
    });
    if prompt.boundary_offset.is_some()
        && let Some(at) = cached_tiers
    {
        markers.push(at);
    }
    if system_blocks > 0 {
        markers.push(system_blocks - 1);
    }
    let side = |role: Role| if role == Role::Assistant { 1 } else { 0 };
    let mut turn_ends = Vec::new();
    for (i, block) in blocks.iter().enumerate().skip(system_blocks) {
        let BlockKind::Message { role, .. } = block.kind else {
            continue;
        };
        let next_same = blocks.get(i + 1).is_some_and(|b| match b.kind {
            BlockKind::Message { role: r, .. } => side(r) == side(role),
            _ => false,
        });
        if !next_same {
            turn_ends.push(i);
        }
    }
    markers.extend(turn_ends.iter().rev().take(2).rev());
    markers.sort_unstable();
    markers.dedup();
    markers
}

/// The chain after a block: SHA-256 of the previous chain and the block's
/// hash, truncated.
fn link(chain: BlockHash, hash: BlockHash) -> BlockHash {
    let mut h = Sha256::new();
    h.update(chain.to_le_bytes());
    h.update(hash.to_le_bytes());
    truncate(&h.finalize())
}

fn bytes_hash(bytes: &[u8]) -> BlockHash {
    truncate(&Sha256::digest(bytes))
}

/// Hash of one request message: role, content, tool calls, tool_call_id.
fn message_hash(m: &RequestMessage) -> BlockHash {
    let mut h = Sha256::new();
    h.update(m.role.as_str().as_bytes());
    h.update([0]);
    h.update(m.content.as_bytes());
    for call in &m.tool_calls {
        for part in [&call.id, &call.name, &call.arguments] {
            h.update([0]);
            h.update(part.as_bytes());
        }
    }
    h.update([1]);
    h.update(m.tool_call_id.as_deref().unwrap_or("").as_bytes());
    truncate(&h.finalize())
}

fn truncate(digest: &[u8]) -> BlockHash {
    let mut first = [0u8; 16];
    first.copy_from_slice(&digest[..16]);
    u128::from_le_bytes(first)
}
