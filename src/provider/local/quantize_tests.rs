use super::*;

#[test]
fn halves_convert_exactly_and_round_to_nearest_even() {
    for (half, value) in [
        (0x3c00, 1.0),
        (0xc000, -2.0),
        (0x7bff, 65504.0),
        (0x0400, 6.103_515_6e-5),
        (0x0001, 5.960_464_5e-8),
        (0x0000, 0.0),
        (0x3555, 0.333_251_95),
    ] {
        assert_eq!(f16_to_f32(half), value, "{half:#06x}");
        assert_eq!(f32_to_f16(value), half, "{value}");
    }
    // Every finite half survives the round trip.
    for half in 0..=u16::MAX {
        if half & 0x7c00 != 0x7c00 {
            assert_eq!(f32_to_f16(f16_to_f32(half)), half, "{half:#06x}");
        }
    }
    // Ties go to the even mantissa; too large is infinity.
    assert_eq!(f32_to_f16(1.0 + 1.0 / 2048.0), 0x3c00);
    assert_eq!(f32_to_f16(1.0 + 3.0 / 2048.0), 0x3c02);
    assert_eq!(f32_to_f16(0.1), 0x2e66);
    assert_eq!(f32_to_f16(1e6), 0x7c00);
    assert_eq!(f32_to_f16(-1e-10), 0x8000);
}

fn q4_1_block(d: f32, m: f32, nibbles: [u8; 32]) -> Vec<u8> {
    let mut block = Vec::new();
    block.extend_from_slice(&f32_to_f16(d).to_le_bytes());
    block.extend_from_slice(&f32_to_f16(m).to_le_bytes());
    for j in 0..16 {
        block.push(nibbles[j] | (nibbles[j + 16] << 4));
    }
    block
}

#[test]
fn a_q4_1_block_is_d_times_q_plus_m_low_nibbles_first() {
    let mut nibbles = [0_u8; 32];
    for (j, n) in nibbles.iter_mut().enumerate() {
        *n = (j % 16) as u8;
    }
    nibbles[16] = 15;
    let block = q4_1_block(0.5, -1.0, nibbles);
    let mut weights = [0.0; BLOCK];
    dequantize_q4_1(&block, &mut weights);
    assert_eq!(weights[0], -1.0);
    assert_eq!(weights[3], 0.5);
    assert_eq!(weights[15], 6.5);
    assert_eq!(weights[16], 6.5);
    assert_eq!(weights[17], -0.5);
}

#[test]
fn a_q4_0_block_is_d_times_q_minus_8() {
    let mut block = f32_to_f16(2.0).to_le_bytes().to_vec();
    block.extend_from_slice(&[0x8f; 16]);
    let mut weights = [0.0; BLOCK];
    dequantize_q4_0(&block, &mut weights);
    assert_eq!(weights[0], 14.0);
    assert_eq!(weights[16], 0.0);
}

#[test]
fn q8_0_keeps_each_weight_within_half_a_step() {
    let mut weights = [0.0; BLOCK];
    for (j, w) in weights.iter_mut().enumerate() {
        *w = (j as f32 - 10.3) * 0.37;
    }
    let mut out = Vec::new();
    quantize_q8_0(&weights, &mut out);
    assert_eq!(out.len(), Q8_0_BYTES);
    let d = f16_to_f32(u16::from_le_bytes([out[0], out[1]]));
    let amax = weights.iter().fold(0.0_f32, |m, w| m.max(w.abs()));
    assert!((d - amax / 127.0).abs() < 1e-3 * d);
    let largest = weights.iter().position(|w| w.abs() == amax).unwrap();
    assert_eq!((out[2 + largest] as i8).unsigned_abs(), 127);
    for (j, w) in weights.iter().enumerate() {
        let back = d * f32::from(out[2 + j] as i8);
        assert!((back - w).abs() <= d * 0.51, "{j}: {w} -> {back}");
    }
    // All zeros: a zero scale and zero values.
    let mut zeros = Vec::new();
    quantize_q8_0(&[0.0; BLOCK], &mut zeros);
    assert!(zeros.iter().all(|&b| b == 0));
}

/// A small GGUF: metadata (a string, `general.file_type`, an array, the
/// alignment), an F32 tensor, a Q4_1 tensor of two blocks and a Q8_0 one.
fn tiny_gguf(alignment: u32, tensor_kinds: &[(u32, u64)]) -> (Vec<u8>, Vec<Vec<u8>>) {
    let mut out = b"GGUF".to_vec();
    out.extend_from_slice(&3_u32.to_le_bytes());
    out.extend_from_slice(&(tensor_kinds.len() as u64).to_le_bytes());
    out.extend_from_slice(&4_u64.to_le_bytes());
    let string = |out: &mut Vec<u8>, s: &str| {
        out.extend_from_slice(&(s.len() as u64).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    };
    string(&mut out, "general.architecture");
    out.extend_from_slice(&8_u32.to_le_bytes());
    string(&mut out, "llama");
    string(&mut out, "general.file_type");
    out.extend_from_slice(&4_u32.to_le_bytes());
    out.extend_from_slice(&3_u32.to_le_bytes());
    string(&mut out, "tokenizer.ggml.tokens");
    out.extend_from_slice(&9_u32.to_le_bytes());
    out.extend_from_slice(&8_u32.to_le_bytes());
    out.extend_from_slice(&2_u64.to_le_bytes());
    string(&mut out, "a");
    string(&mut out, "bc");
    string(&mut out, "general.alignment");
    out.extend_from_slice(&4_u32.to_le_bytes());
    out.extend_from_slice(&alignment.to_le_bytes());

    let mut data = Vec::new();
    let mut offset = 0_u64;
    for (i, &(kind, elements)) in tensor_kinds.iter().enumerate() {
        string(&mut out, &format!("t{i}"));
        out.extend_from_slice(&1_u32.to_le_bytes());
        out.extend_from_slice(&elements.to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&offset.to_le_bytes());
        let bytes: Vec<u8> = match kind {
            Q4_1 => (0..elements / 32)
                .flat_map(|b| {
                    let mut nibbles = [0_u8; 32];
                    for (j, n) in nibbles.iter_mut().enumerate() {
                        *n = ((j as u64 * 7 + b) % 16) as u8;
                    }
                    q4_1_block(0.25 + b as f32, -0.5, nibbles)
                })
                .collect(),
            _ => (0..tensor_bytes(kind, elements).unwrap_or(8))
                .map(|j| (j * 31 % 251) as u8)
                .collect(),
        };
        offset = align(offset + bytes.len() as u64, u64::from(alignment));
        data.push(bytes);
    }
    let start = align(out.len() as u64, u64::from(alignment)) as usize;
    out.resize(start, 0);
    for bytes in &data {
        out.extend_from_slice(bytes);
        let end = align((out.len() - start) as u64, u64::from(alignment)) as usize;
        out.resize(start + end, 0);
    }
    (out, data)
}

#[test]
fn a_converted_file_has_q8_0_weights_the_same_metadata_and_aligned_data() {
    let dir = tempfile::tempdir().unwrap();
    let (source_bytes, data) = tiny_gguf(64, &[(F32, 8), (Q4_1, 64), (Q8_0, 32)]);
    let source = dir.path().join("in.gguf");
    let target = dir.path().join("out.gguf");
    std::fs::write(&source, &source_bytes).unwrap();

    let converted = convert_to_q8_0(&source, &target).unwrap();
    assert_eq!((converted.tensors, converted.requantized), (3, 1));
    let written = std::fs::read(&target).unwrap();
    assert_eq!(converted.bytes, written.len() as u64);
    assert_eq!(converted.sha256, hex::encode(Sha256::digest(&written)));

    let before = read_header(&mut std::io::Cursor::new(&source_bytes)).unwrap();
    let after = read_header(&mut std::io::Cursor::new(&written)).unwrap();
    let kinds: Vec<u32> = after.tensors.iter().map(|t| t.kind).collect();
    assert_eq!(kinds, [F32, Q8_0, Q8_0]);
    assert_eq!(after.alignment, 64);
    assert_eq!(after.data_start % 64, 0);
    assert!(after.tensors.iter().all(|t| t.offset % 64 == 0));
    // Only general.file_type changed in the metadata: 3 (Q4_1) -> 7 (Q8_0).
    let at = after.file_type_at.unwrap();
    assert_eq!(&after.metadata[at..at + 4], &7_u32.to_le_bytes());
    let mut expected = before.metadata.clone();
    expected[at..at + 4].copy_from_slice(&7_u32.to_le_bytes());
    assert_eq!(after.metadata, expected);

    let tensor = |i: usize, len: usize| {
        let start = (after.data_start + after.tensors[i].offset) as usize;
        &written[start..start + len]
    };
    assert_eq!(tensor(0, 32), data[0].as_slice(), "F32 copied");
    assert_eq!(tensor(2, 34), data[2].as_slice(), "Q8_0 copied");
    // The Q4_1 weights come back within half a Q8_0 step.
    let q8 = tensor(1, 2 * Q8_0_BYTES);
    for b in 0..2 {
        let mut original = [0.0; BLOCK];
        dequantize_q4_1(&data[1][b * 20..b * 20 + 20], &mut original);
        let block = &q8[b * Q8_0_BYTES..(b + 1) * Q8_0_BYTES];
        let d = f16_to_f32(u16::from_le_bytes([block[0], block[1]]));
        for j in 0..BLOCK {
            let back = d * f32::from(block[2 + j] as i8);
            assert!((back - original[j]).abs() <= d * 0.51, "block {b} weight {j}");
        }
    }
}

#[test]
fn files_it_cannot_convert_are_format_errors() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("in.gguf");
    let target = dir.path().join("out.gguf");
    let format_error = |bytes: &[u8]| {
        std::fs::write(&source, bytes).unwrap();
        match convert_to_q8_0(&source, &target) {
            Err(QuantizeError::Format { message, .. }) => message,
            other => panic!("{other:?}"),
        }
    };
    assert!(format_error(&[0; 4096]).contains("not a GGUF"));
    let (whole, _) = tiny_gguf(32, &[(Q4_1, 64)]);
    assert!(format_error(&whole[..100]).contains("truncated"));
    let (unknown, _) = tiny_gguf(32, &[(Q4_1, 64), (99, 32)]);
    assert!(format_error(&unknown).contains("type 99"));
    let error = convert_to_q8_0(&dir.path().join("none"), &target).unwrap_err();
    assert!(matches!(error, QuantizeError::Io { .. }));
}
