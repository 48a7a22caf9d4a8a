// §06 What it costs. Every word of the section, [English, Chinese].

export default {
  "title-s06": ["6. What it costs", "6. 代价"],
  "intro-s06": [
    "Prefill processes many tokens for each weight it reads; decode processes one. That single fact shapes the economics of serving.",
    "预填充每读一次权重就处理许多词元；解码只处理一个。这一点决定了推理服务的成本结构。",
  ],

  // W-intensity
  "title-W-intensity": ["Work per byte of weights", "每字节权重的计算量"],
  "before-W-intensity": [
    "Arithmetic intensity: how many floating-point operations each byte of weights pays for. Change the prompt length.",
    "算术强度：每读一个字节的权重能换来多少次浮点运算。改变提示词长度。",
  ],
  "after-W-intensity": [
    "Prefill grows with the prompt and keeps the processor busy; decode stays near one and waits for memory.",
    "预填充随提示词增长，让处理器保持忙碌；解码始终接近一，在等待内存。",
  ],
  "W-intensity.p": ["Prompt length P", "提示词长度 P"],
  "W-intensity.prefill": ["prefill P = {p}", "预填充 P = {p}"],
  "W-intensity.decode": ["decode", "解码"],
  "W-intensity.value": ["{v} FLOPs/byte", "{v} FLOPs/字节"],
  "W-intensity.chart": ["fp16 weights", "fp16 权重"],
  "W-intensity.readout": ["P = {p}: prefill {prefill} FLOPs per byte (compute-bound); decode {decode} (memory-bound) whatever the model",
    "P = {p}：预填充每字节 {prefill} FLOPs（算力受限）；解码 {decode}（内存受限），与模型大小无关"],

  // W-weights-vs-cache
  "title-W-weights-vs-cache": ["One request is cheap", "一个请求很便宜"],
  "before-W-weights-vs-cache": ["GPT-3's weights beside the cache of one sequence.", "GPT-3 的权重与一个序列的缓存并排比较。"],
  "after-W-weights-vs-cache": ["For a single user, the weights dominate.", "只有一个用户时，权重占绝大部分。"],
  "W-weights-vs-cache.context": ["Context (tokens)", "上下文（词元数）"],
  "W-weights-vs-cache.weights": ["weights (175B, fp16)", "权重（1750 亿，fp16）"],
  "W-weights-vs-cache.cache": ["one cache, {n} tokens", "一份缓存，{n} 个词元"],
  "W-weights-vs-cache.chart": ["GPT-3", "GPT-3"],
  "W-weights-vs-cache.readout": ["one sequence at {n} tokens: {cache} of cache beside {weights} of weights — a thin sliver",
    "一个 {n} 词元的序列：{cache} 的缓存，旁边是 {weights} 的权重——只是一条细缝"],

  // W-concurrency
  "title-W-concurrency": ["Many requests are not", "很多请求就不便宜了"],
  "before-W-concurrency": ["Add concurrent sequences: the weights are shared, each sequence brings its own cache.",
    "增加并发序列：权重是共享的，每个序列各带一份缓存。"],
  "after-W-concurrency": ["Past a few dozen sequences the caches outweigh the weights: serving many users is a memory problem first.",
    "几十个序列之后，缓存的总量超过权重：为许多用户服务首先是内存问题。"],
  "W-concurrency.label": ["Concurrent sequences", "并发序列数"],
  "W-concurrency.weights": ["weights (once)", "权重（只付一次）"],
  "W-concurrency.caches": [({ n }) => (n === 1 ? "{n} cache" : "{n} caches"), "{n} 份缓存"],
  "W-concurrency.chart": ["GPT-3, 2,048 tokens each", "GPT-3，每个序列 2,048 个词元"],
  "W-concurrency.readout": [
    ({ n }) => `${n === 1 ? "{n} sequence" : "{n} sequences"}: caches {caches} vs weights {weights} — {verdict}`,
    "{n} 个序列：缓存 {caches}，权重 {weights}——{verdict}",
  ],
  "W-concurrency.outweigh": ["caches outweigh the weights", "缓存超过了权重"],
  "W-concurrency.heavier": ["weights still heavier (caches win from {x})", "权重仍然更重（从 {x} 个序列起缓存更重）"],

  // W-param-split
  "title-W-param-split": ["Where GPT-2 small's parameters live", "GPT-2 small 的参数在哪里"],
  "before-W-param-split": ["GPT-2 small's 124M parameters, by where they sit.", "GPT-2 small 的 1.24 亿个参数，按所在位置划分。"],
  "after-W-param-split": ["Most live in the blocks, and most of those in the FFNs.", "大部分在块里，而块里的大部分在 FFN 中。"],
  "W-param-split.ffn": ["FFN (12 blocks)", "FFN（12 个块）"],
  "W-param-split.attention": ["attention (12 blocks)", "注意力（12 个块）"],
  "W-param-split.embeddings": ["embeddings + positions", "嵌入 + 位置"],
  "W-param-split.chart": ["GPT-2 small", "GPT-2 small"],
  "W-param-split.readout": ["{share} of {total} parameters live in the 12 blocks (mostly FFN); the rest is the embedding table",
    "{total} 个参数中有 {share} 在 12 个块里（大部分在 FFN）；其余是嵌入表"],
};
