// §06 What it costs. Every word of the section, [English, Chinese].

const plural = (n, one, many) => (n === 1 ? one : many);

export default {
  "title-s06": ["6. What it costs", "6. 代价"],
  "intro-s06": [
    "Every step of the loop reads the model's whole set of weights from memory once, then spends that read on however many tokens the step holds. How much arithmetic one byte of weights pays for, in FLOPs per byte, decides what a step waits on: the chip's arithmetic, or memory feeding it. This section prices the loop three ways, per byte, per request and for many requests at once, and measures what can be measured on the server running this page.",
    "循环的每一步都要把模型的全部权重从内存里读一遍，再把这一遍读取用在这一步所含的所有词元上。每读一个字节的权重能换来多少次运算（FLOPs/字节），决定了这一步在等什么：等芯片算，还是等内存送数据。这一节从三个角度给循环标价：每个字节、每个请求、许多请求同时在跑；凡是能在运行本页的服务器上实测的，都实测。",
  ],
  "bridge-s06": [
    "That is the whole bill: FLOPs per byte of weights, bytes of cache per sequence, and parameters per block. The next section folds the loop itself into a few lines of code that run, with the price of each line beside it.",
    "账单就是这些：每字节权重换来的运算量、每条序列占的缓存字节数、每个块里的参数。下一节把循环本身收进几行能运行的代码，每一行旁边标上它的价钱。",
  ],

  // units and rates, Latin in both languages (GB/s, GFLOP/s, KiB, MiB, ms), as Chinese technical writing keeps them
  "unit.bytes-per-s": ["{v} {scale}B/s", "{v} {scale}B/s"],
  "unit.flops-per-s": ["{v} {scale}FLOP/s", "{v} {scale}FLOP/s"],
  "unit.fpb": ["{v} FLOPs/byte", "{v} FLOPs/字节"],
  "unit.kib": ["{v} KiB", "{v} KiB"],
  "unit.mib": ["{v} MiB", "{v} MiB"],
  "unit.ms": ["{v} ms", "{v} ms"],
  "unit.s": ["{v} s", "{v} 秒"],
  "bound.compute": ["compute-bound", "算力受限"],
  "bound.memory": ["memory-bound", "内存受限"],
  "machine.here": ["the server running this page", "运行本页的服务器"],
  "roofline.aria": ["Roofline: {y} against {x} for {machines}; guides at {guides}",
    "Roofline 图：{y} 随 {x} 变化，包括 {machines}；参考线：{guides}"],
  "roofline.aria-machine": ["{name}", "{name}"],
  "what.P": ["the prompt length P", "提示词长度 P"],

  // W-intensity
  "title-W-intensity": ["Work per byte of weights", "每字节权重换来的运算"],
  "W-intensity.runs-on": [
    "A formula, on GPT-3 175B's shape in fp16 (each weight 2 bytes, 2 FLOPs per token); one ridge point measured on the server running this page, two published by NVIDIA.",
    "公式，按 GPT-3 175B 的配置（fp16）计算（每个权重 2 字节，每个词元在它上面做 2 次运算）；一个分界点是在运行本页的服务器上实测的，另两个是 NVIDIA 公布的。",
  ],
  "before-W-intensity": [
    "Drag P, the number of prompt tokens one prefill step serves with a single read of the weights, or press a preset. The bars give FLOPs per byte for prefill and for decode. The chart below puts both on the Roofline model of the server running this page and of two GPUs: the share of each chip's arithmetic a step of that intensity can keep busy. Left of a machine's ridge point the line climbs, because the step waits on memory; right of it the line is flat, because arithmetic is the limit.",
    "拖动 P，也就是一次预填充用一遍权重读取服务的提示词词元数，或者按一个预设。柱子给出预填充和解码每字节的运算量。下面的 Roofline 图把两者画在运行本页的服务器和两款 GPU 上：这样强度的一步，最多能让芯片的算力忙起来多少。在分界点左边，线往上爬，因为这一步在等内存；在分界点右边，线是平的，因为算力成了上限。",
  ],
  "after-W-intensity": [
    "Prefill's intensity climbs with the prompt; decode's stays pinned near one.",
    "预填充的强度随提示词一起爬升；解码的强度始终钉在 1 附近。",
  ],
  "W-intensity.p": ["Prompt length P", "提示词长度 P"],
  "W-intensity.preset": ["P = {p}", "P = {p}"],
  "W-intensity.prefill": ["prefill P = {p}", "预填充 P = {p}"],
  "W-intensity.decode": ["decode", "解码"],
  "W-intensity.chart": ["GPT-3, fp16 weights", "GPT-3，fp16 权重"],
  "W-intensity.axis": ["FLOPs per byte of weights read", "每读一字节权重的 FLOPs"],
  "W-intensity.roof-x": ["FLOPs per byte (log scale)", "每字节 FLOPs（对数刻度）"],
  "W-intensity.roof-y": ["share of the matmul rate usable", "可用的矩阵乘法算力占比"],
  "W-intensity.legend-here": ["the server running this page, measured: ridge {ridge}", "运行本页的服务器，实测：分界点 {ridge}"],
  "W-intensity.legend-gpu": ["{name}, published: ridge {ridge}", "{name}，公开数据：分界点 {ridge}"],
  "gpu.a100": ["NVIDIA A100 SXM 80GB", "NVIDIA A100 SXM 80G"],
  "gpu.h100": ["NVIDIA H100 SXM", "NVIDIA H100 SXM"],
  "device.cpu": ["a CPU", "CPU"],
  "device.cuda": ["a GPU", "GPU"],
  "W-intensity.guide-decode": ["decode {v}", "解码 {v}"],
  "W-intensity.guide-prefill": ["prefill P = {p}: {v}", "预填充 P = {p}：{v}"],
  "W-intensity.guide-both": ["prefill P = 1 and decode: {v}", "预填充 P = 1 与解码：{v}"],
  "W-intensity.machine": [
    ({ threads }) => `The server running this page (${threads ? "{device}, {threads} threads" : "{device}"}) reads memory at {bw} and multiplies {dtype} matrices ({shape}) at {rate}, so its ridge point is {rate} ÷ {bw} = {ridge} FLOPs per byte. A step that does fewer FLOPs per byte than that waits on memory; one that does more waits on arithmetic.`,
    ({ threads }) => `运行本页的服务器（${threads ? "{device}，{threads} 个线程" : "{device}"}）读内存 {bw}，做 {dtype} 矩阵乘法（{shape}）{rate}，所以它的分界点是 {rate} ÷ {bw} = 每字节 {ridge} 次运算。每字节运算少于这个数的一步在等内存；多于这个数的在等算力。`,
  ],
  "W-intensity.readout": [
    "P = {p}: prefill {prefill} FLOPs per byte, decode {decode}. On the server running this page (ridge {ridge}) the prefill is {bound}, the decode {dbound}.",
    "P = {p}：预填充每字节 {prefill} 次运算，解码 {decode}。在运行本页的服务器上（分界点 {ridge}），预填充{bound}，解码{dbound}。",
  ],
  "W-intensity.told-1": [
    "At P = 1 a prefill is no different from a decode: {v} FLOPs per byte, {bound} here.",
    "P = 1 时，预填充和解码没有区别：每字节 {v} 次运算，在这里{bound}。",
  ],
  "W-intensity.told-16-compute": [
    "At P = 16 one read of the weights pays for {v} FLOPs per byte, above the server's ridge of {ridge}: here that prefill is compute-bound, paced by arithmetic, not memory.",
    "P = 16 时，一遍权重读取换来每字节 {v} 次运算，高于这台服务器 {ridge} 的分界点：在这里，这次预填充是算力受限的，快慢由运算决定，而不是内存。",
  ],
  "W-intensity.told-16-memory": [
    "At P = 16 one read of the weights pays for {v} FLOPs per byte, still below the server's ridge of {ridge}: even here that prefill is memory-bound.",
    "P = 16 时，一遍权重读取换来每字节 {v} 次运算，仍低于这台服务器 {ridge} 的分界点：即使在这里，这次预填充也是内存受限的。",
  ],
  "W-intensity.told-gpu": [
    "{name} (published: {rate} over {bw}) has its ridge at {ridge}: there P = 16 is {bound}, and a prefill needs {from} prompt tokens or more before arithmetic becomes the limit.",
    "{name}（公开数据：{rate}，带宽 {bw}）的分界点在 {ridge}：在它上面 P = 16 是{bound}的，预填充要有 {from} 个以上的提示词词元，算力才会成为上限。",
  ],
  "W-intensity.told-where": [
    ({ here }) => (here ? "So “P = 16 is compute-bound” is true on a machine whose ridge is at most 16, as this server's is, and false on these GPUs, whose arithmetic outruns their memory by far more."
      : "So “P = 16 is compute-bound” is true only on a machine whose ridge is at most 16: neither this server nor these GPUs."),
    ({ here }) => (here ? "所以“P = 16 时算力受限”只在分界点不超过 16 的机器上成立，比如这台服务器；在这两款 GPU 上不成立，它们的算力比内存快得多。"
      : "所以“P = 16 时算力受限”只在分界点不超过 16 的机器上成立：这台服务器和这两款 GPU 都不是。"),
  ],
  "W-intensity.told-decode": [
    "Decode sits at {v} FLOPs per byte whatever the model's size: each weight costs 2 bytes to read and does 2 FLOPs (a multiply and an add) for the single token it serves. That is below every ridge above, so decode is memory-bound everywhere; faster arithmetic cannot help it, only faster memory, or more sequences sharing each read of the weights.",
    "不管模型多大，解码都停在每字节 {v} 次运算：每个权重读一次要 2 字节，为它服务的唯一一个词元做 2 次运算（一次乘、一次加）。这比上面每一个分界点都低，所以解码在哪里都是内存受限的；更快的算力帮不了它，只有更快的内存，或者让更多序列共用每一次权重读取，才有用。",
  ],

  // W-weights-vs-cache
  "title-W-weights-vs-cache": ["One request is cheap", "一个请求很便宜"],
  "before-W-weights-vs-cache": [
    "Drag the context length: the bars weigh GPT-3's weights, fixed whatever the request, against the KV cache of one sequence of that length.",
    "拖动上下文长度：柱子把 GPT-3 的权重（不管什么请求都不变）和这么长的一条序列的 KV 缓存放在一起称一称。",
  ],
  "after-W-weights-vs-cache": [
    "One request is cheap. The bill changes with the second one.",
    "一个请求很便宜。账本从第二个请求开始变样。",
  ],
  "W-weights-vs-cache.context": ["Context (tokens)", "上下文（词元数）"],
  "W-weights-vs-cache.weights": ["weights ({params} parameters, fp16)", "权重（{params}个参数，fp16）"],
  "W-weights-vs-cache.cache": ["one cache, {n} tokens", "一份缓存，{n} 个词元"],
  "W-weights-vs-cache.chart": ["GPT-3", "GPT-3"],
  "W-weights-vs-cache.axis": ["memory (GiB)", "内存（GiB）"],
  "W-weights-vs-cache.readout": [
    "{n} tokens: one sequence's cache is {cache}, {share} of the {weights} of weights.",
    "{n} 个词元：一条序列的缓存是 {cache}，是 {weights} 权重的 {share}。",
  ],
  "W-weights-vs-cache.told": [
    "Even at GPT-3's full context of {n} tokens, one sequence's cache is {cache} beside {weights} of weights: {share} of them, a thin sliver.",
    "即使在 GPT-3 完整的 {n} 词元上下文下，一条序列的缓存也只有 {cache}，旁边是 {weights} 的权重：只占权重的 {share}，细细一条。",
  ],
  "W-weights-vs-cache.named": [
    "Those weights are counted from GPT-3's published configuration (96 blocks, d_model 12,288, a 50,257-token vocabulary, 2,048 positions), which comes to {params} parameters; the {named} the model is known by would give {namedGib}.",
    "这些权重是按 GPT-3 公布的配置（96 块，d_model 12,288，词表 50,257，位置 2,048）数出来的，共 {params}个参数；按它通常说的 {named}个参数算，则是 {namedGib}。",
  ],

  // W-concurrency
  "title-W-concurrency": ["Many requests are not", "很多请求就不便宜了"],
  "before-W-concurrency": [
    "Drag the number of sequences served at once, each holding GPT-3's full 2,048-token context, or press 36 or 37. The weights are read once and shared by all of them; every sequence brings its own cache. The table under the chart sets the model on this page beside GPT-3.",
    "拖动同时服务的序列数（每条都占满 GPT-3 的 2,048 词元上下文），或者按 36、37。权重读一遍，所有序列共用；每条序列各带一份自己的缓存。图下面的表格把本页的模型和 GPT-3 放在一起对比。",
  ],
  "after-W-concurrency": [
    "This pressure, memory for the caches rather than raw FLOPs, is what production serving is built around. The next widget runs it on the real engine.",
    "正是这股压力——缓存要的内存，而不是原始的 FLOPs——塑造了生产级的推理服务。下一个组件就在真实的引擎上把它跑一遍。",
  ],
  "W-concurrency.runs-on": [
    "The chart is a formula, on GPT-3 175B's shape in fp16; the table's last column is {model} as loaded here: its shape, its KV pool's type and its weights.",
    "图是公式，按 GPT-3 175B 的配置（fp16）计算；表格最后一列是本页加载的 {model}：它的形状、KV 池的数据类型和权重。",
  ],
  "W-concurrency.label": ["Concurrent sequences", "并发序列数"],
  "W-concurrency.preset": ["{n} sequences", "{n} 条序列"],
  "W-concurrency.weights": ["weights (once)", "权重（只付一次）"],
  "W-concurrency.caches": [({ n }) => (n === 1 ? "{n} cache" : "{n} caches"), "{n} 份缓存"],
  "W-concurrency.chart": ["GPT-3, 2,048 tokens each", "GPT-3，每条序列 2,048 个词元"],
  "W-concurrency.axis": ["memory (GiB)", "内存（GiB）"],
  "W-concurrency.readout": [
    ({ n }) => `${n === 1 ? "{n} sequence" : "{n} sequences"}: caches {caches} vs weights {weights} — {verdict}`,
    "{n} 条序列：缓存 {caches}，权重 {weights}——{verdict}",
  ],
  "W-concurrency.outweigh": ["caches outweigh the weights", "缓存超过了权重"],
  "W-concurrency.heavier": ["weights still heavier (caches win from {x})", "权重仍然更重（从 {x} 条序列起缓存更重）"],
  "W-concurrency.told": [
    "{weights} of weights over {cache} per sequence is {ratio}. With {below} sequences the caches weigh {cBelow}, still under the weights; with {above} they weigh {cAbove}, over them. Past {below} sequences, the caches outweigh the weights that serve them all.",
    "{weights} 的权重除以每条序列 {cache} 的缓存，等于 {ratio}。{below} 条序列时，缓存共 {cBelow}，还在权重之下；{above} 条时共 {cAbove}，超过了权重。超过 {below} 条序列，缓存加起来就比服务它们所有人的权重还重。",
  ],
  "W-concurrency.told-model": [
    ({ crossover }) => `The model on this page sits at the other extreme. {model} keeps {perToken} of keys and values per token ({dtype}, {layers} blocks × {heads} KV heads × {dim}), so one sequence at its full context of {context} tokens holds {perSeq}, beside {weights} of weights as loaded here: ${crossover === 1 ? "a single full-length sequence already outweighs them." : "from {crossover} sequences the caches outweigh them."}`,
    ({ crossover }) => `本页的模型在另一个极端。{model} 每个词元要存 {perToken} 的键和值（{dtype}，{layers} 块 × {heads} 个 KV 头 × {dim}），所以一条占满 {context} 词元上下文的序列就要 {perSeq}，而它在这里加载后的权重只有 {weights}：${crossover === 1 ? "一条满长度的序列就已经比权重重了。" : "从 {crossover} 条序列起，缓存就比权重重。"}`,
  ],
  "W-concurrency.table": ["Weights against caches, per model", "每个模型的权重与缓存"],
  "W-concurrency.col.what": ["quantity", "项目"],
  "W-concurrency.row.per-token": ["KV cache per token", "每个词元的 KV 缓存"],
  "W-concurrency.row.per-seq": ["one sequence at its full context", "一条序列（占满上下文）"],
  "W-concurrency.row.weights": ["weights", "权重"],
  "W-concurrency.row.crossover": ["sequences for the caches to outweigh the weights", "缓存超过权重所需的序列数"],
  "W-concurrency.gpt3": ["GPT-3 175B (fp16, formula)", "GPT-3 175B（fp16，公式）"],
  "W-concurrency.model": ["{model} (as loaded here)", "{model}（本页加载的）"],
  "W-concurrency.at": ["{bytes} at {n} tokens", "{n} 词元时 {bytes}"],
  "W-concurrency.seqs": [({ n }) => (n === 1 ? "{n} sequence" : "{n} sequences"), "{n} 条序列"],

  // W-many-users
  "title-W-many-users": ["Many users on one engine", "一台引擎，许多用户"],
  "W-many-users.runs-on": [
    "Runs {model}'s own engine: your requests go through a paged KV pool of their own (16-token blocks, prefix caching on), sampled at T = 0.8 with a fixed seed, each to its full length. The times are the server's, as it runs them.",
    "直接运行 {model} 的引擎：你设置的请求经过一个专属的分页 KV 池（每块 16 个词元，开启前缀缓存），以温度 0.8、固定随机种子采样，每个请求都生成到所设的长度。时间是服务器运行时实测的。",
  ],
  "before-W-many-users": [
    "Set up a crowd and press Run: how many requests, how long a system prompt they all start with and whether it is the same text for all of them, how long each user's own question is, how many tokens each generates, and how many 16-token blocks the KV pool has. The engine runs them for real (it ran the first preset when the page opened). Then step through what it did: each square is one block of the pool, numbered by the request that holds it; a thick blue square marked ×n is one block n requests share. Try the presets: a shared system prompt, the same crowd with nothing shared, and a pool too small for everyone.",
    "先布置一群用户，再按“运行”：多少个请求、它们开头共用多长的系统提示词、这段文字是否人人相同、每个用户自己的问题多长、每个请求生成多少词元，以及 KV 池有多少个 16 词元的块。引擎会真的把它们跑一遍（页面打开时已经跑过第一个预设）。然后一步步看它做了什么：每个方格是池里的一块，上面的数字是占用它的请求；蓝色粗框、标着 ×n 的方格，是 n 个请求共用的一块。试试几个预设：共用的系统提示词、同样一群人但什么都不共用，以及一个装不下所有人的小池子。",
  ],
  "after-W-many-users": [
    "Everything here is the engine's own bookkeeping: the block tables, the free list, the reference counts that let a prefix be shared, and the preemption that frees a request's blocks when the pool runs out.",
    "这里的一切都是引擎自己的账本：块表、空闲列表、让前缀得以共用的引用计数，以及池子用完时释放某个请求全部块的抢占。",
  ],
  "W-many-users.requests": ["Requests", "请求数"],
  "W-many-users.system": ["System prompt (tokens)", "系统提示词（词元数）"],
  "W-many-users.shared": ["the same system prompt for every request", "所有请求用同一段系统提示词"],
  "W-many-users.own": ["Each user's own question (tokens)", "每个用户自己的问题（词元数）"],
  "W-many-users.new": ["New tokens per request", "每个请求的新词元数"],
  "W-many-users.pool": ["Blocks in the pool", "池中的块数"],
  "W-many-users.arrival": ["Arrivals", "到达方式"],
  "W-many-users.arrival.staggered": ["one request joins per step", "每一步加入一个请求"],
  "W-many-users.arrival.together": ["all at once", "全部同时到达"],
  "W-many-users.run": ["Run", "运行"],
  "W-many-users.preset.shared": ["shared system prompt", "共用系统提示词"],
  "W-many-users.preset.unshared": ["nothing shared", "什么都不共用"],
  "W-many-users.preset.small": ["a pool too small", "池子太小"],
  "W-many-users.step": ["Step", "步"],
  "W-many-users.pool-empty": ["The KV pool's blocks: press Run to fill them", "KV 池的块：按“运行”把它们填上"],
  "W-many-users.play": ["Play the steps", "逐步播放"],
  "W-many-users.pause": ["Pause", "暂停"],
  "W-many-users.legend.request": ["a block one request holds (its number)", "某个请求独占的一块（标着它的编号）"],
  "W-many-users.legend.shared": ["a block ×n requests share", "×n 个请求共用的一块"],
  "W-many-users.legend.free": ["free", "空闲"],
  "W-many-users.legend.cached": ["free, still holding a prefix a later request can reuse", "空闲，但还存着后来的请求可复用的前缀"],
  "W-many-users.count.step": ["step", "步"],
  "W-many-users.count.time": ["time since the first request", "距第一个请求的时间"],
  "W-many-users.count.used": ["blocks in use", "在用的块"],
  "W-many-users.count.shared": ["of them shared", "其中共用的"],
  "W-many-users.count.free": ["free blocks", "空闲的块"],
  "W-many-users.count.running": ["running", "运行中"],
  "W-many-users.count.waiting": ["waiting", "等待中"],
  "W-many-users.count.preempted": ["preempted so far", "累计被抢占"],
  "W-many-users.count.generated": ["tokens generated", "已生成词元"],
  "W-many-users.count.rate": ["tokens per second so far", "到此为止每秒词元数"],
  "W-many-users.of": ["{a} of {b}", "{a} / {b}"],
  "W-many-users.requests-table": ["Each request", "每个请求"],
  "W-many-users.col.request": ["request", "请求"],
  "W-many-users.col.prompt": ["prompt tokens", "提示词词元"],
  "W-many-users.col.cached": ["found in the prefix cache", "在前缀缓存中找到"],
  "W-many-users.col.state": ["at this step", "这一步的状态"],
  "W-many-users.col.blocks": ["blocks (shared)", "块（共用）"],
  "W-many-users.col.generated": ["generated", "已生成"],
  "W-many-users.col.ttft": ["time to first token", "首个词元用时"],
  "W-many-users.col.rate": ["tokens per second", "每秒词元数"],
  "W-many-users.col.preempted": ["preempted", "被抢占"],
  "W-many-users.state.later": ["not arrived", "还没到达"],
  "W-many-users.state.waiting": ["waiting", "等待中"],
  "W-many-users.state.preempted": ["preempted, waiting", "被抢占，等待中"],
  "W-many-users.state.running": ["running", "运行中"],
  "W-many-users.state.done": ["done", "已完成"],
  "W-many-users.readout": [
    ({ preemptions }) => `{requests} requests, {generated} tokens in {seconds} ({rate} tok/s); at most {peak} of {blocks} blocks in use, {shared} of them shared at once; ${preemptions === 0 ? "no preemptions" : preemptions === 1 ? "1 preemption" : "{preemptions} preemptions"}.`,
    ({ preemptions }) => `{requests} 个请求，{seconds}内生成 {generated} 个词元（{rate} tok/s）；最多同时用了 {blocks} 块中的 {peak} 块，其中同时共用的最多 {shared} 块；${preemptions === 0 ? "没有发生抢占" : "发生了 {preemptions} 次抢占"}。`,
  ],
  "W-many-users.metrics-agree": [
    "The engine's own {metrics} after the run say the same: {prompt} prompt tokens, {generated} generated, {preemptions} preempted, {ttft} first-token times observed, {used} blocks in use at the end.",
    "运行后引擎自己的 {metrics} 给出同样的数字：提示词词元 {prompt} 个，生成 {generated} 个，抢占 {preemptions} 次，记录了 {ttft} 个首词元时间，结束时在用 {used} 块。",
  ],
  "W-many-users.metrics-differ": [
    "The engine's {metrics} after the run differ from the requests' own counts in: {which}.",
    "运行后引擎的 {metrics} 和各请求自己的计数在这些地方不一致：{which}。",
  ],
  "W-many-users.told-shared": [
    ({ hits }) => `Every request started with the same {system} tokens of system prompt, and {full} full blocks of them were computed once and then shared: at the busiest step {shared} blocks were held by several requests at once, and the prefix cache handed out ${hits === 0 ? "no token" : "{hits} prompt tokens"} instead of recomputing ${hits === 1 ? "it" : "them"}.`,
    ({ hits }) => `每个请求都以同样的 {system} 个词元的系统提示词开头，其中 {full} 个完整的块只算了一次，之后被大家共用：最忙的那一步，有 {shared} 块同时被几个请求占着；前缀缓存直接交出了 ${hits === 0 ? "0 个" : "{hits} 个"}提示词词元，没有重算。`,
  ],
  "W-many-users.told-partial": [
    "Only full blocks are shared: the last {rest} tokens of the system prompt sit in a block with the user's own question, so each request computes and keeps them itself.",
    "只有完整的块才能共用：系统提示词最后的 {rest} 个词元和用户自己的问题挤在同一块里，所以每个请求都得自己算、自己存。",
  ],
  "W-many-users.told-unshared": [
    "Each request's system prompt was its own text, so nothing could be shared: {total} prompt tokens, each computed and stored once per request.",
    "每个请求的系统提示词都是各自不同的文字，所以没有任何东西可以共用：{total} 个提示词词元，每个请求各算各存。",
  ],
  "W-many-users.told-together": [
    "All the requests arrived at once and were prefilled in the same steps, before any of their blocks was full and registered, so none could find another's prefix in the cache: arrivals spread over time are what let the cache work.",
    "所有请求同时到达，在同样的几步里一起预填充；那时它们的块都还没写满、没登记，所以谁也找不到别人的前缀：请求在时间上错开到达，前缀缓存才起作用。",
  ],
  "W-many-users.told-preempted": [
    ({ n }) => `The pool ran out of blocks: ${n === 1 ? "once, the engine preempted" : "{n} times, the engine preempted"} the newest running request, freeing all its blocks, and recomputed its tokens when room came back. The oldest request is never preempted, so every request finishes.`,
    "池里的块用完了：引擎 {n} 次抢占了最新的那个运行中的请求，释放它的全部块，等有空位时再重算它的词元。最早的请求永远不会被抢占，所以每个请求都能完成。",
  ],
  "W-many-users.told-room": [
    "The pool never ran out ({peak} of {blocks} blocks at the busiest step), so no request was preempted; press “a pool too small” to see what happens when it does.",
    "池子始终够用（最忙时用了 {blocks} 块中的 {peak} 块），所以没有请求被抢占；点“池子太小”看看不够用时会怎样。",
  ],
  "W-many-users.told-ttft": [
    "Time to first token ran from {min} to {max} (median {median}): a request waits for the ones before it to be scheduled, and every step it joins carries the others' decoding too.",
    "首个词元用时从 {min} 到 {max}（中位数 {median}）：一个请求要等排在前面的先被调度，而它加入的每一步还要同时承担其他请求的解码。",
  ],
  "W-many-users.aria-table": ["each request at this step", "这一步每个请求的状态"],
  "pool.aria": [
    "The KV pool's {n} blocks: {used} in use ({shared} shared), {free} free ({cached} of them still holding a cached prefix)",
    "KV 池的 {n} 块：在用 {used} 块（其中共用 {shared} 块），空闲 {free} 块（其中 {cached} 块还存着缓存的前缀）",
  ],
  "error.busy": ["another run of this widget is in progress on this explorer; try again when it ends",
    "这个组件的另一次运行正在进行；请等它结束再试"],
  "error.pool_fit": ["one request needs {need} blocks and the pool has {blocks}: add blocks or shorten the requests",
    "一个请求需要 {need} 块，而池子只有 {blocks} 块：请增加块数或缩短请求"],
  "what.requests": ["the number of requests", "请求数"],
  "what.system_tokens": ["the system prompt's length", "系统提示词长度"],
  "what.own_tokens": ["the question's length", "问题长度"],
  "what.new_tokens": ["the new tokens", "新词元数"],
  "what.pool_blocks": ["the pool's blocks", "池中的块数"],

  // W-param-split
  "title-W-param-split": ["What each step reads: GPT-2 small's parameters", "每一步读的是什么：GPT-2 small 的参数"],
  "before-W-param-split": [
    "Every bill above starts from the weights a step reads once, whoever it serves. Where do they sit? GPT-2 small's, by their place in the pipeline and the block of sections 1 and 2:",
    "上面每一笔账，都从一步要读一遍的那些权重算起，不管这一步服务的是谁。它们都在哪里？下面是 GPT-2 small 的参数，按它们在第 1、2 节的流水线和块里的位置分开：",
  ],
  "after-W-param-split": [
    "The blocks are where the weights are, and the FFN is where most of the blocks are: that is what each decode step streams from memory, to produce one token.",
    "权重大多在块里，而块里的大头在 FFN：每一步解码为了产出一个词元，从内存里读的就是这些。",
  ],
  "W-param-split.ffn": ["FFN (12 blocks)", "FFN（12 个块）"],
  "W-param-split.attention": ["attention (12 blocks)", "注意力（12 个块）"],
  "W-param-split.norms": ["norms in the blocks", "块里的归一化"],
  "W-param-split.embeddings": ["token and position tables, final norm", "词元表与位置表、最终归一化"],
  "W-param-split.chart": ["GPT-2 small", "GPT-2 small"],
  "W-param-split.axis": ["parameters", "参数量"],
  "W-param-split.readout": ["GPT-2 small: {total} parameters; {blocks} in the 12 blocks (FFN {ffn}, attention {attention}), {outside} outside them",
    "GPT-2 small：{total} 个参数；12 个块里 {blocks} 个（FFN {ffn}，注意力 {attention}），块外 {outside} 个"],
  "W-param-split.told": [
    "About two thirds of them, {share}, live in the {n} blocks, and most of those are the FFNs': {ffnShare} of the blocks, as the block's own split in section 2 said. The other {outShare} are the token and position tables the page has used since its first lookup, and the final norm.",
    "其中大约三分之二，即 {share}，住在 {n} 个块里；块里的大头又是 FFN，占块内参数的 {ffnShare}，和第 2 节里块的拆分一致。剩下的 {outShare} 是本页从第一次查表起就一直在用的词元表和位置表，外加最终的归一化。",
  ],
};
