#!/usr/bin/python3
"""Writes the fuzz harnesses' seed corpora (tests/fuzz/corpus/<harness>/): small valid inputs of
every byte parser for the harness model (4 decoder layers, MoE layers 1-3, 8 experts, top-2), plus
copies of the shipped topologies and model descriptions. The written files are committed; run this
again only to regenerate them. Usage: /usr/bin/python3 tests/fuzz/make_seeds.py [PLAN.json]"""
import base64, io, json, os, shutil, struct, sys, zipfile
import numpy as np

root = os.path.dirname(os.path.abspath(__file__))
src = os.path.dirname(os.path.dirname(root))
corpus = os.path.join(root, 'corpus')

def copy_into(harness, path, name):
    os.makedirs(os.path.join(corpus, harness), exist_ok=True)
    shutil.copy(path, os.path.join(corpus, harness, name))

def put(harness, name, data):
    d = os.path.join(corpus, harness)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data.encode() if isinstance(data, str) else data)

rng = np.random.default_rng(7)
def routes(rows, layers, dtype):
    r = np.zeros((rows, layers, 2), dtype=dtype)
    for t in range(rows):
        for l in range(layers):
            r[t, l] = rng.choice(8, 2, replace=False)
    return r
def npy(a):
    b = io.BytesIO(); np.save(b, a); return b.getvalue()
def b64(b): return base64.b64encode(b).decode()

# SGLang: meta_info.routed_experts, base64 of int32 [rows][num_hidden_layers][top_k].
r = routes(3, 4, np.int32)
put('fuzz_import_sglang', 'one.json', json.dumps({'text': 'hi', 'meta_info': {'id': 'r1', 'prompt_tokens': 2, 'routed_experts': b64(r.tobytes())}}))
put('fuzz_import_sglang', 'lines.jsonl', '\n'.join(json.dumps({'meta_info': {'id': f'r{i}', 'routed_experts': b64(routes(2 + i, 4, np.int32).tobytes())}}) for i in range(2)) + '\n')
put('fuzz_import_sglang', 'turns.json', json.dumps([{'meta_info': {'id': 'c', 'routed_experts_start_len': 0, 'routed_experts': b64(routes(2, 4, np.int32).tobytes())}},
                                                     {'meta_info': {'id': 'c', 'routed_experts_start_len': 2, 'routed_experts': b64(routes(1, 4, np.int32).tobytes())}}]))
put('fuzz_import_sglang', 'nested.json', json.dumps({'meta_info': {'id': 'n', 'routed_experts': routes(2, 4, np.int32).tolist()}}))
# vLLM: choices[k].routed_experts = base64 of an .npy, or nested lists (v0.21).
put('fuzz_import_vllm', 'b64.json', json.dumps({'id': 'cmpl-1', 'choices': [{'index': 0, 'routed_experts': b64(npy(routes(3, 4, np.int16)))}]}))
put('fuzz_import_vllm', 'nested.json', json.dumps({'id': 'cmpl-2', 'prompt_routed_experts': routes(2, 4, np.int16).tolist(),
                                                   'choices': [{'index': 0, 'routed_experts': routes(2, 4, np.int16).tolist()}]}))
# .npy: one sample [rows][layers][top_k].
put('fuzz_import_npy', 'int32.npy', npy(routes(3, 4, np.int32)))
put('fuzz_import_npy', 'uint8.npy', npy(routes(2, 3, np.uint8)))
# .npz: one sample per member (stored and deflated), and a verl-style padded batch.
def npz(members, method):
    b = io.BytesIO()
    with zipfile.ZipFile(b, 'w', method) as z:
        for name, a in members.items():
            z.writestr(name + '.npy', npy(a))
    return b.getvalue()
put('fuzz_import_npz', 'stored.npz', npz({'s0': routes(3, 4, np.int32), 's1': routes(2, 4, np.int32)}, zipfile.ZIP_STORED))
put('fuzz_import_npz', 'deflated.npz', npz({'s0': routes(3, 4, np.int16)}, zipfile.ZIP_DEFLATED))
batch = np.zeros((2, 4, 4, 2), dtype=np.int16); mask = np.zeros((2, 4), dtype=np.int64)
batch[0, 1:] = routes(3, 4, np.int16); mask[0, 1:] = 1
batch[1, 0:2] = routes(2, 4, np.int16); mask[1, 0:2] = 1
put('fuzz_import_npz', 'verl.npz', npz({'routed_experts': batch, 'attention_mask': mask}, zipfile.ZIP_STORED))
# Nested JSON lists [rows][layers][top_k].
put('fuzz_import_nested_json', 'one.json', json.dumps(routes(3, 4, np.int32).tolist()))
put('fuzz_import_nested_json', 'lines.jsonl', json.dumps(routes(2, 3, np.int32).tolist()) + '\n' + json.dumps(routes(1, 3, np.int32).tolist()) + '\n')
# NeMo-RL nrlre1 strings (last row is the default route arange(top_k)).
def nrl(rows, layers):
    a = routes(rows, layers, np.int16); a[-1] = [0, 1]
    return f'nrlre1:int16:{rows}x{layers}x2:' + b64(a.tobytes())
put('fuzz_import_nrlre1', 'lines.nrlre1', nrl(3, 4) + '\n' + nrl(2, 4) + '\n')
put('fuzz_import_nrlre1', 'chat.nrlre1', json.dumps({'choices': [{'message': {'role': 'assistant', 'routed_experts': nrl(3, 4)}}]}))
# Megatron-LM: choices[i].moe_topk_indices ndarray wrapper, and the example script's results.
put('fuzz_import_megatron', 'choices.json', json.dumps({'choices': [{'moe_topk_indices': ['ndarray', {'data': routes(3, 3, np.int16).tolist(), 'dtype': 'int16'}]}]}))
put('fuzz_import_megatron', 'script.json', json.dumps({'7': {'routing_indices': routes(2, 3, np.int16).tolist()}}))
# Per-request step JSON: list of {layer id: [[ids]...] | null}.
step = [{str(l): (None if l == 0 else routes(2, 1, np.int32)[:, 0].tolist()) for l in range(4)} for _ in range(2)]
put('fuzz_import_step_json', 'request.json', json.dumps(step))
# Per-prompt CSV.
csv = 'Layer ID,Batch Number,Token,Activated Expert IDs\n' + ''.join(
    f'{l},0,tok{t},"[{a}, {b}]"\n' for l in (1, 2, 3) for t, (a, b) in enumerate([(0, 1), (2, 3), (4, 7)]))
put('fuzz_import_prompt_csv', 'prompt.csv', csv)
# Aggregate expert totals (integral floats accepted).
put('fuzz_import_aggregate', 'counts.json', json.dumps({'counts': [[1, 2, 3, 4, 5, 6, 7, 8]] * 3, 'num_layers': 3, 'num_experts': 8, 'src': 'seed'}))
put('fuzz_import_aggregate', 'floats.json', '{"counts": [[1.0, 2.0, 0.0, 4.0, 5.0, 6.0, 7.0, 8.0], [8, 7, 6, 5, 4, 3, 2, 1]], "num_layers": 2, "num_experts": 8}')
# Auto detection gets every text seed.
for h in ('sglang', 'vllm', 'nested_json', 'megatron', 'step_json', 'aggregate', 'nrlre1'):
    d = os.path.join(corpus, 'fuzz_import_' + h)
    for n in sorted(os.listdir(d)):
        copy_into('fuzz_import_auto', os.path.join(d, n), h + '-' + n)
# safetensors: 8-byte little-endian header length, JSON header, data.
def st(tensors, meta):
    header = {'__metadata__': meta} if meta is not None else {}
    data = b''; off = 0
    for name, dtype, shape, raw in tensors:
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [off, off + len(raw)]}
        data += raw; off += len(raw)
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    return struct.pack('<Q', len(h)) + h + data
put('fuzz_safetensors', 'two.safetensors', st([('model.layers.1.mlp.experts.0.w1.weight', 'BF16', [2, 2], bytes(8)),
                                                ('model.layers.1.mlp.gate.weight', 'F32', [8, 2], bytes(range(64)))], {'format': 'pt'}))
put('fuzz_safetensors', 'empty.safetensors', st([], None))
put('fuzz_safetensors_index', 'index.json', json.dumps({'metadata': {'total_size': 72}, 'weight_map': {
    'model.layers.1.mlp.experts.0.w1.weight': 'model-00001-of-00002.safetensors',
    'model.layers.1.mlp.gate.weight': 'model-00002-of-00002.safetensors'}}))
# Text parsers: the shipped topologies and model descriptions, checkpoint configs, a small plan.
for n in sorted(os.listdir(os.path.join(src, 'resources', 'topologies'))):
    copy_into('fuzz_topology', os.path.join(src, 'resources', 'topologies', n), n)
for n in sorted(os.listdir(os.path.join(src, 'resources', 'models'))):
    copy_into('fuzz_model_description', os.path.join(src, 'resources', 'models', n), n)
put('fuzz_hf_config', 'deepseek.json', json.dumps({'model_type': 'deepseek_v2', 'num_hidden_layers': 4, 'n_routed_experts': 8, 'num_experts_per_tok': 2,
                                                   'first_k_dense_replace': 1, 'moe_layer_freq': 1}))
put('fuzz_hf_config', 'qwen.json', json.dumps({'model_type': 'qwen2_moe', 'num_hidden_layers': 4, 'num_experts': 8, 'num_experts_per_tok': 2,
                                               'decoder_sparse_step': 1, 'mlp_only_layers': [0]}))
put('fuzz_hf_config', 'llama4.json', json.dumps({'model_type': 'llama4', 'text_config': {'num_hidden_layers': 4, 'num_local_experts': 8,
                                                 'num_experts_per_tok': 1, 'interleave_moe_layer_step': 2}}))
# Library blobs (fuzz_storage_blobs.cpp). Codec: byte 0 picks counts/totals/routes, then the shape.
import zlib
def leb(v):
    out = b''
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80]); v >>= 7
    return out + bytes([v])
counts = [0, 1, 127, 128, 300, 16384, 2**32 - 1, 5]
put('fuzz_counts_codec', 'counts', bytes([0, len(counts), 0x01]) + b''.join(leb(v) for v in counts))
totals = [0, 1, 2**40, 2**64 - 1]
put('fuzz_counts_codec', 'totals', bytes([1, len(totals), 0x02]) + b''.join(leb(v) for v in totals))
def routes_blob(tokens, layers, k, width, ids):
    raw = b''.join(int(i).to_bytes(width, 'little') for i in ids)
    return bytes([0x03, width]) + leb(tokens) + leb(layers) + leb(k) + zlib.compress(raw, 9)
# [L][tokens][K] ids; 255 = a missing route (1-byte ids); experts = 1 + bytes 4..5.
put('fuzz_counts_codec', 'routes8', bytes([2, 3, 2, 2, 7, 0]) + routes_blob(3, 2, 2, 1, [0, 1, 2, 3, 4, 5, 6, 7, 255, 255, 1, 0]))
put('fuzz_counts_codec', 'routes16', bytes([2, 1, 1, 2, 0x2b, 0x01]) + routes_blob(1, 1, 2, 2, [300, 0]))
# Library columns: byte 0 picks the column, the rest is its value (the template's own value).
put('fuzz_library_blobs', 'counts', bytes([0, 0x01]) + bytes([1, 1, 1, 1, 1, 1, 1, 1]))
put('fuzz_library_blobs', 'routes', bytes([1]) + routes_blob(2, 2, 2, 1, [0, 1, 1, 2, 2, 3, 3, 0]))
put('fuzz_library_blobs', 'totals', bytes([2, 0x02]) + bytes([1, 2, 3, 4, 4, 3, 2, 1]))
put('fuzz_library_blobs', 'budgets', b'\x03' + json.dumps({'seed': 7, 'workers': 1}).encode())
put('fuzz_library_blobs', 'timings', b'\x04' + json.dumps({'plan': 1.5, 'score': 0.25}).encode())
put('fuzz_library_blobs', 'topology', b'\x05' + json.dumps({'ep_ranks': 2, 'experts_per_layer': 4, 'dp_slots': 2, 'edp_shards': [[0, 1]], 'token_cap': 8,
                                                              'attention_stages': [{'name': 'mla', 'alpha': 1.0, 'beta': 0.0}]}).encode())
put('fuzz_library_blobs', 'metrics', b'\x06' + json.dumps({'cv_global': 0.5, 'ep_peak_sum': 3, 'ep_tail_peak': 2, 'ep_balance_efficiency': 0.9,
                                                            'attention_sum': 1.0, 'joint': 2.0, 'cap_violations': 0, 'empty_cells': 0}).encode())
if len(sys.argv) > 1:  # a small plan written by the CLI: make_seeds.py PLAN.json
    copy_into('fuzz_plan_file', sys.argv[1], 'plan.json')

# The Python argument conversions (fuzz_python_args.cpp): a header (range lo: 8 bytes, shift: 1, width:
# 4), then one object program (first byte = the kind of object, see build() in the harness).
def args_seed(name, program, lo=0, shift=0, width=100):
    put('fuzz_python_args', name, struct.pack('>qBI', lo, shift, width) + bytes(program))
args_seed('int_2_40', [11, 40, 0, 0])
args_seed('int_neg_2_64', [11, 64, 1, 1], lo=-(1 << 62), width=0xffffffff)
args_seed('pyint', [0, 3, 0x10, 0x27, 0], lo=1)
args_seed('np_int64', [1, 3] + list((2**40).to_bytes(8, 'big')))
args_seed('np_bool', [1, 8, 0, 0, 0, 0, 0, 0, 0, 1])
args_seed('bool_true', [2, 1])
args_seed('float_nan', [3, 0x7f, 0xf8, 0, 0, 0, 0, 0, 0])
args_seed('str_surrogates', [4, 3, 0, 0, 0x61, 0, 0xdc, 0xff, 0, 0xd8, 0])
args_seed('bytes_not_utf8', [5, 4, 0x62, 0xff, 0xc3, 0x28])
args_seed('list_of_ints', [6, 3, 0, 1, 5, 1, 3, 0, 0, 0, 0, 0, 0, 0, 7, 11, 33, 0, 0, 0])
args_seed('big_endian_i2', [7, 1, 1, 4, 1, 2, 0x01, 0x86, 1, 0x7f, 0, 2, 0x12, 0x34, 1, 0x40, 1])
args_seed('big_endian_u8_2d', [7, 7, 2, 2, 3, 8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 5, 1, 6, 1, 7, 1, 8,
                                1, 9, 1, 1, 1])
args_seed('bool_array', [7, 8, 1, 3, 1, 1, 1, 1, 0, 1, 2, 0])
args_seed('raising_keyboard_interrupt', [8, 3])
args_seed('raising_type_error', [8, 0])
args_seed('not_an_int', [10])

