// §05 The KV cache. Every word of the section, [English, Chinese].

export default {
  "title-s05": ["5. The KV cache", "5. KV 缓存"],
  "intro-s05": [
    "The cache keeps, for every layer, one key vector and one value vector per token. It makes decoding cheap, and it brings two bugs that fail silently.",
    "缓存为每一层、每个词元保存一个键向量和一个值向量。它让解码变得便宜，也带来两个悄无声息的错误。",
  ],
  "cache.context": ["Context (tokens)", "上下文（词元数）"],
  "cache.tokens": [({ n }) => (n === 1 ? "{n} token" : "{n} tokens"), "{n} 个词元"],

  // W-cache-fill
  "title-W-cache-fill": ["One K and one V per token per layer", "每层每个词元一对 K 和 V"],
  "before-W-cache-fill": [
    "Step through generation. Each step appends one key and one value to every layer; three layers are drawn, K and V each in its own row of slots, the newest pair in orange.",
    "逐步查看生成过程。每一步都给每一层追加一个键和一个值；图中画出三层，K 和 V 各占一行槽位，最新的一对是橙色。",
  ],
  "after-W-cache-fill": ["Pairs are appended, never rewritten: after t tokens there are exactly t pairs in each layer.",
    "键值对只追加、从不改写：t 个词元之后，每层恰好有 t 对。"],
  "W-cache-fill.step": ["Step", "步"],
  "W-cache-fill.row": ["layer {layer} {kind}", "第 {layer} 层 {kind}"],
  "W-cache-fill.aria": ["{pairs} K slots and {pairs} V slots filled in each of {layers} layers ({drawn} drawn)",
    "{layers} 层中每层填了 {pairs} 个 K 槽位和 {pairs} 个 V 槽位（画出 {drawn} 层）"],
  "W-cache-fill.readout": [
    ({ pairs }) => `after step {at}: ${pairs === 1 ? "{pairs} (K, V) pair" : "{pairs} (K, V) pairs"} in every one of {layers} layers — {bytes} bytes; earlier pairs never rewritten`,
    "第 {at} 步之后：{layers} 层中每层 {pairs} 对 (K, V)——共 {bytes} 字节；之前的键值对从不改写",
  ],

  // W-cache-memory
  "title-W-cache-memory": ["What the cache weighs", "缓存有多重"],
  "before-W-cache-memory": ["GPT-3 (96 layers, d_model 12,288) in 16-bit floats, one sequence. Change the context length.",
    "GPT-3（96 层，d_model 12,288），16 位浮点，一个序列。改变上下文长度。"],
  "after-W-cache-memory": ["One 2,048-token sequence needs gigabytes before a single weight is counted.",
    "一个 2,048 词元的序列，在计入任何权重之前就要占用好几 GiB。"],
  "W-cache-memory.chart": ["KV cache, one sequence", "KV 缓存，一个序列"],
  "W-cache-memory.readout": ["{n} tokens: {gib} (2 × {layers} layers × {d} × {n} × 2 bytes), before a single weight",
    "{n} 个词元：{gib}（2 × {layers} 层 × {d} × {n} × 2 字节），还没算任何权重"],

  // W-ring-overflow
  "title-W-ring-overflow": ["A ring buffer that wraps silently", "悄悄回绕的环形缓冲区"],
  "before-W-ring-overflow": [
    "A cache with too few slots. The naive ring starts again at slot 0 and overwrites pairs that attention still needs; the guarded cache refuses. Edit the prompt and the capacity, then run both; the slots show which position each one holds at the end.",
    "一个槽位不够的缓存。朴素环形缓冲区从槽位 0 重新开始，覆盖注意力仍需要的键值对；受保护的缓存则拒绝继续。修改提示词和容量，然后两个都运行；槽位图显示最后每个槽位保存的是哪个位置。",
  ],
  "after-W-ring-overflow": ["The ring's text drifts with no error at all; the guarded cache stops with one.",
    "环形缓冲区的文字在没有任何报错的情况下跑偏；受保护的缓存则报错停止。"],
  "W-ring-overflow.prompt": ["Prompt", "提示词"],
  "W-ring-overflow.capacity": ["Capacity (slots)", "容量（槽位数）"],
  "W-ring-overflow.run": ["Run both", "两个都运行"],
  "W-ring-overflow.slots-empty": ["the ring's slots, drawn after a run", "环形缓冲区的槽位，运行后画出"],
  "W-ring-overflow.aria.correct": ["guarded engine", "受保护的引擎"],
  "W-ring-overflow.aria.ring": ["naive ring buffer", "朴素环形缓冲区"],
  "W-ring-overflow.correct": ["guarded engine:", "受保护的引擎："],
  "W-ring-overflow.guard": ["guarded cache of {capacity}:", "容量为 {capacity} 的受保护缓存："],
  "W-ring-overflow.ring": ["naive ring of {capacity}:", "容量为 {capacity} 的朴素环形缓冲区："],
  "W-ring-overflow.slots": ["{capacity} slots after {written} writes (prompt {prompt}, then one per step)",
    "{capacity} 个槽位，共写入 {written} 次（先写提示词的 {prompt} 个，之后每步一个）"],
  "W-ring-overflow.slots-aria": ["slots 0 to {last} hold positions {slots}; positions {over} were overwritten",
    "槽位 0 到 {last} 依次存放位置 {slots}；被覆盖的位置：{over}"],
  "W-ring-overflow.none": ["none", "无"],
  "W-ring-overflow.readout": ["the ring overwrote the pairs of positions {over} without a word; the guarded cache refused instead",
    "环形缓冲区一声不吭地覆盖了位置 {over} 的键值对；受保护的缓存则拒绝继续"],

  // W-position-bug
  "title-W-position-bug": ["Every token at position 0", "每个词元都在位置 0"],
  "before-W-position-bug": ["Give every new token position 0 instead of its real position, beside the correct engine.",
    "把每个新词元的位置都设为 0，而不是它的真实位置，并与正确的引擎并排比较。"],
  "after-W-position-bug": [
    "No exception and no crash, only worse text. Both cache bugs are silent, which is why the engine checks positions and capacity itself.",
    "没有异常，也没有崩溃，只是文字变差。两个缓存错误都悄无声息，所以引擎自己检查位置和容量。",
  ],
  "W-position-bug.run": ["Run with the bug beside the correct engine", "带着这个错误运行，与正确的引擎并排比较"],
  "W-position-bug.aria.correct": ["correct positions", "正确的位置"],
  "W-position-bug.aria.buggy": ["positions stuck at 0", "卡在 0 的位置"],
  "W-position-bug.positions": ["positions {list}:", "位置 {list}："],
  "W-position-bug.same": ["same text this time — the damage is in the scores", "这次文字相同——损害藏在分数里"],
  "W-position-bug.diverge": ["the outputs diverge — silently, no exception", "两边的输出分道扬镳——悄无声息，没有异常"],
};
