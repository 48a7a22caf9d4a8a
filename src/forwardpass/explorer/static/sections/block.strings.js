// §01–§02 Inside a block: every word of the section, [English, Chinese]. Keys as in pipeline.strings.js.

import { plural } from "../lib/i18n.js";

/** the step between the blocks W-block-steps's chart draws (block.js: every ⌈n / 10⌉-th, from block 1) */
const chartEvery = (n) => Math.max(1, Math.ceil(Number(n) / 10));

export default {
  "title-s01": ["2. Inside a block", "2. 块的内部"],
  "intro-s01": [
    "A block runs one short routine twice. It reads the stream, normalizes a copy, runs attention on the copy and adds the result back; then it normalizes a fresh copy, runs the feed-forward network (FFN) on it and adds that back too. Two sublayers, each wrapped in the add-never-replace shape section 1 ended on. This section asks what each of them reads, where their weights sit, and why the norm sits where it does.",
    "一个块把同一套小流程做两遍：读取残差流，对一份副本做归一化，在副本上跑注意力，再把结果加回去；然后对一份新副本做归一化，在上面跑前馈网络（FFN），结果同样加回去。两个子层，都遵循第 1 节结尾那个“只加不换”的模式。这一节要回答：它们各自读什么，权重放在哪里，归一化为什么放在那个位置。",
  ],
  "bridge-s01": [
    "That is the whole stack: N blocks of attention and FFN, each adding into one stream. Section 3 steps out of the top of it and asks what comes out: a score for every token of the vocabulary, and how one of them becomes the next word.",
    "整摞块就是这样：N 个由注意力和 FFN 组成的块，每个都往同一条残差流里加东西。第 3 节走出这摞块的顶端，看看最后出来的是什么：词表里每个词元一个分数，以及怎样从中挑出下一个词。",
  ],
  "what.layer": ["the block index (counted from 0)", "块的下标（从 0 数起）"],

  // W-block-steps
  "title-W-block-steps": ["The stream runs straight; branches fork and merge", "主干笔直，支路分出又汇回"],
  "before-W-block-steps": [
    "Step through one block with the arrows. The thick horizontal line is the stream: it never bends. Each branch forks off it, works on a normalized copy, and merges back through a +. The numbers are the norm of the last token's stream in the model's first block, on your prompt.",
    "用箭头按钮走完一个块。那条粗的横线就是残差流，它从不拐弯；每条支路从它分出去，在归一化后的副本上计算，再经过一个加号汇回来。图上的数字是最后一个词元的残差流在模型第一个块里的范数，取自你的提示词。",
  ],
  "after-W-block-steps": [
    "Both branches end the same way: attention adds once, the FFN adds again. That is section 1's invariant, twice in every block; nothing here writes over the stream.",
    "两条支路的结尾一模一样：注意力加一次，FFN 再加一次。这正是第 1 节的那条不变式，在每个块里出现两次；这里没有任何东西覆盖残差流。",
  ],
  // the chart draws every ⌈n / 10⌉-th block from block 1, and the last (block.js, W-block-steps)
  "W-block-steps.told": [
    ({ n }) => `On your prompt, the last token's stream enters block 1 with norm {in0}; attention adds a vector of norm {a0} and the FFN one of norm {f0}. After all {n} blocks it leaves block {last} with norm {out}, and every change on the way was something added to it (a vector added in another direction can make the norm smaller, too).${chartEvery(n) === 1 ? "" : chartEvery(n) === 2 ? " The chart draws the odd-numbered blocks and the last." : ` The chart draws every ${chartEvery(n)}th block from block 1, and the last.`}`,
    ({ n }) => `在你的提示词上，最后一个词元的残差流以范数 {in0} 进入第 1 块；注意力加进一个范数为 {a0} 的向量，FFN 又加进一个范数为 {f0} 的。走完全部 {n} 个块后，它以范数 {out} 离开第 {last} 块，一路上的每一次变化都是往里加东西（加进去的向量方向不同，范数也可能变小）。${chartEvery(n) === 1 ? "" : chartEvery(n) === 2 ? "图中只画出奇数块和最后一块。" : `图中从第 1 块起每 ${chartEvery(n)} 块画一块，外加最后一块。`}`,
  ],
  "W-block-steps.prev": ["previous step", "上一步"],
  "W-block-steps.next": ["next step", "下一步"],
  "W-block-steps.step.0": ["read the stream", "读取残差流"],
  "W-block-steps.step.1": ["normalize a copy", "对一份副本做归一化"],
  "W-block-steps.step.2": ["attention on the copy", "在副本上做注意力"],
  "W-block-steps.step.3": ["add it back", "把结果加回残差流"],
  "W-block-steps.step.4": ["normalize a copy", "再对一份副本做归一化"],
  "W-block-steps.step.5": ["FFN on the copy", "在副本上跑 FFN"],
  "W-block-steps.step.6": ["add it back", "把结果加回残差流"],
  "W-block-steps.step.2.after": ["attention on the copy, its output normalized", "在副本上做注意力，再对输出做归一化"],
  "W-block-steps.step.5.after": ["FFN on the copy, its output normalized", "在副本上跑 FFN，再对输出做归一化"],
  "W-block-steps.chart": ["the last token's stream, in → out of each block", "最后一个词元的残差流：进入 → 离开每个块"],
  "W-block-steps.axis": ["norm (L2) leaving the block", "离开该块时的范数（L2）"],
  "W-block-steps.bar": ["block {b}", "第 {b} 块"],
  "W-block-steps.bar-text": ["{a} → {b}", "{a} → {b}"],
  "W-block-steps.main": ["the stream", "残差流"],
  "W-block-steps.attn": ["attention", "注意力"],
  "W-block-steps.ffn": ["FFN", "FFN"],
  "W-block-steps.norm": ["norm", "归一化"],
  "W-block-steps.in": ["last token, into block 1: norm {x}", "最后一个词元进入第 1 块：范数 {x}"],
  "W-block-steps.out": ["out: {x}", "离开：{x}"],
  "W-block-steps.aria": ["a block: the stream runs straight through; attention and the FFN each fork off a normalized copy and add their output back",
    "一个块：残差流笔直穿过；注意力和 FFN 各自从一份归一化副本分出，再把输出加回来"],
  "W-block-steps.aria.after": ["a block: the stream runs straight through; attention and the FFN each fork off a normalized copy, normalize their output and add it back",
    "一个块：残差流笔直穿过；注意力和 FFN 各自从一份归一化副本分出，对输出再做一次归一化，然后加回来"],
  "W-block-steps.readout": ["step {at} of {n}: {step}", "第 {at} 步（共 {n} 步）：{step}"],
  "W-block-steps.added.attention": [" — attention added a vector of norm {a}", "——注意力加进了一个范数为 {a} 的向量"],
  "W-block-steps.added.ffn": [" — the FFN added a vector of norm {f}; the stream leaves block 1 with norm {out}",
    "——FFN 加进了一个范数为 {f} 的向量；残差流以范数 {out} 离开第 1 块"],

  // W-reach, W-attention-map and W-attention share their controls' names
  "block.token": ["Token", "词元"],
  "block.layer": ["Block", "块"],
  "block.head": ["Head", "注意力头"],

  // W-reach
  "title-W-reach": ["Attention reaches back; the FFN stays put", "注意力往回看，FFN 原地不动"],
  "before-W-reach": [
    "Pick a token (from the menu, or click one on the right of the picture), a block and a head. In the attention panel a line runs from the picked token to every token it can read, as thick and as dark as that head's real weight, with the weight written beside it. In the FFN panel there is one line: from the token to itself.",
    "选一个词元（从菜单里选，或者直接点图右侧的词元），再选一个块和一个注意力头。注意力那一栏里，从所选词元向它能读到的每个词元各连一条线，线的粗细和深浅就是这个头真实的权重，数值标在旁边。FFN 那一栏只有一条线：从这个词元连到它自己。",
  ],
  "after-W-reach": [
    "Leave token 0 and attention's lines fan out to every earlier position, while the FFN never leaves its own row. Attention moves information between tokens; the FFN moves it between channels, one token at a time.",
    "只要离开第 0 个词元，注意力的线就会散开，连到前面的每一个位置；而 FFN 永远不离开自己那一行。注意力在词元之间搬运信息，FFN 在通道之间搬运信息，一次只处理一个词元。",
  ],
  "W-reach.told": [
    ({ count }) => (count === 1
      ? "{piece} at position {i} is the first token: in block {layer}, head {head} it can read only itself (weight {sum}). The FFN reads {ffn} position too: its own."
      : "{piece} at position {i} reads {count} positions in block {layer}, head {head}, and their weights add up to {sum}; the heaviest line goes to {best} ({w}). The FFN reads {ffn} position: its own."),
    ({ count }) => (count === 1
      ? "位置 {i} 的 {piece} 是第一个词元：在第 {layer} 块第 {head} 个头里，它只能读它自己（权重 {sum}）。FFN 同样只读 {ffn} 个位置：它自己。"
      : "位置 {i} 的 {piece} 在第 {layer} 块第 {head} 个头里读取 {count} 个位置，权重加起来是 {sum}；最粗的那条线连向 {best}（{w}）。FFN 只读 {ffn} 个位置：它自己。"),
  ],
  "W-reach.panel.attention": [({ n }) => (n === 1 ? "attention: reads 1 position" : "attention: reads {n} positions"),
    "注意力：读取 {n} 个位置"],
  "W-reach.panel.ffn": ["FFN: reads 1 position", "FFN：只读 1 个位置"],
  "W-reach.reads": ["read, with its weight", "被读的词元及权重"],
  "W-reach.reader": ["tokens (click to pick)", "词元（点击选择）"],
  "W-reach.aria": ["attention from {piece} to {n} positions, weights {weights}; the FFN reads only {piece} itself",
    "从 {piece} 出发的注意力连向 {n} 个位置，权重 {weights}；FFN 只读 {piece} 自己"],
  "W-reach.readout": [
    ({ n }) => (n === 1
      ? "attention reads the one position there is, {keep} ({piece}, {w}); the FFN reads only position {keep}"
      : "attention reads all {n} positions up to {keep} (most: {piece}, {w}); the FFN reads only position {keep}"),
    "注意力读取位置 {keep} 及之前的全部 {n} 个位置（权重最大的是 {piece}，{w}）；FFN 只读位置 {keep}",
  ],

  // W-attention-map
  "title-W-attention-map": ["Every head of a block at once", "一个块的所有注意力头"],
  "before-W-attention-map": [
    "One small map per head of the chosen block: each row is a query (the token reading), each column a key (the token read), and the darker the cell, the more weight. The upper triangle is empty: no token may read one that comes after it. Hover over a cell, or tap it, to read its weight; click a row to open it step by step in the table below. Move the block slider to see the patterns change with depth.",
    "所选的这个块里，每个注意力头一张小图：每一行是一个查询（正在读的词元），每一列是一个键（被读的词元），格子越深，权重越大。右上三角是空的：任何词元都不能读排在它后面的词元。把鼠标移到格子上（或轻点一下）可以看到权重；点击某一行，就会在下面的表格里把这一行一步步展开。拖动块的滑块，看这些图样随深度怎么变。",
  ],
  "after-W-attention-map": [
    "Heads in the same block read the same prompt very differently: some keep most of their weight on the first token, some on the previous one, some spread it out. Each head is a separate question the block asks, and the table below opens any one row of it.",
    "同一个块里的各个头，读同一段提示词的方式可以大不相同：有的把大部分权重放在第一个词元上，有的放在前一个词元上，有的摊得很开。每个头都是这个块提出的一个独立问题；下面的表格可以把其中任意一行展开。",
  ],
  "W-attention-map.told": [
    "Read the last row of each map, where the last token, {piece}, looks: in {first} of the {n} heads its heaviest weight is on the first token ({p0}), in {previous} on the token just before it, in {self} on itself, and in {other} somewhere else.",
    // a count of none said in words (没有一个), not as "0 个"
    (v) => { const c = (k) => (Number(v[k]) === 0 ? "没有一个" : `{${k}} 个`);
      return `看每张图的最后一行，也就是最后一个词元 {piece} 看向哪里：{n} 个头里，${c("first")}把最大权重放在第一个词元（{p0}）上，${c("previous")}放在紧挨着的前一个词元上，${c("self")}放在它自己身上，${c("other")}放在别处。`; },
  ],
  "W-attention-map.hint": ["Hover over or tap a cell to read it; click a row to open it in the table below.",
    "把鼠标移到格子上或轻点格子查看数值；点击一行，在下面的表格里展开。"],
  "W-attention-map.head": ["head {h}", "第 {h} 个头"],
  "W-attention-map.legend": ["attention weight (row: query, column: key)", "注意力权重（行：查询，列：键）"],
  "W-attention-map.aria": [({ t }) => `attention maps of block {layer}: {heads} heads over ${plural(t, "{t} token", "{t} tokens")}; rows are queries, columns keys`,
    "第 {layer} 块的注意力图：{heads} 个头，{t} 个词元；行是查询，列是键"],
  "W-attention-map.readout": [
    ({ t, kv }) => `block {layer}: {heads} heads sharing ${plural(kv, "{kv} KV head", "{kv} KV heads")}, ${plural(t, "{t} token", "{t} tokens")}; every row sums to 1 (largest difference {gap})`,
    "第 {layer} 块：{heads} 个头共用 {kv} 个 KV 头，{t} 个词元；每一行之和都是 1（最大偏差 {gap}）",
  ],
  "W-attention-map.detail": ["head {h}: query {q} {qp} reads key {k} {kp} with weight {w}",
    "第 {h} 个头：查询 {q} {qp} 读取键 {k} {kp}，权重 {w}"],

  // W-attention
  "title-W-attention": ["Attention, opened up", "把注意力拆开看"],
  "before-W-attention": [
    "One row of one map, step by step. The picked token's query meets every key (q·k); the scores are scaled by 1/√head_dim; keys after the query are masked to −∞; softmax turns what is left into weights; and the output is the weighted sum of the values. Pick a token, a block and a head here, or click a row in the maps above.",
    "把某张图里的一行一步步拆开：所选词元的查询向量和每个键做点积（q·k）；分数乘以 1/√head_dim；排在查询后面的键被遮成 −∞；softmax 把剩下的分数变成权重；输出是各个值向量的加权和。可以在这里选词元、块和头，也可以直接点上面图里的一行。",
  ],
  "after-W-attention": [
    "A masked score becomes a weight of exactly zero after softmax: that is the empty triangle of the maps. The output is a blend of value vectors, dominated by the keys whose scores stood out.",
    "被遮住的分数经过 softmax 后，权重恰好是零，这就是上面那些图里空着的三角。输出是值向量的混合，由分数突出的那几个键主导。",
  ],
  "W-attention.caption": ["One query against every key", "一个查询对所有的键"],
  "W-attention.col.key": ["key", "键"],
  "W-attention.col.dot": ["q·k", "q·k"],
  "W-attention.col.scaled": ["× {scale}", "× {scale}"],
  "W-attention.col.mask": ["mask", "遮盖"],
  "W-attention.col.weight": ["weight", "权重"],
  "W-attention.kept": ["kept", "保留"],
  "W-attention.later": ["−∞ (later)", "−∞（在后）"],
  "W-attention.window": ["−∞ (window)", "−∞（窗外）"],
  "W-attention.readout": [
    "block {layer}, head {head} (KV head {kv}), query {piece}: scores × 1/√{hd} = {scale}; {masked} masked; most weight on {best} ({w}); output = Σ weight × value: [{out}, …] (norm {norm})",
    "第 {layer} 块、第 {head} 个头（KV 头 {kv}），查询 {piece}：分数 × 1/√{hd} = {scale}；{masked} 个被遮盖；权重最大的是 {best}（{w}）；输出 = Σ 权重 × 值：[{out}, …]（范数 {norm}）",
  ],

  // W-split
  "title-W-split": ["Where a block's weights live", "块的权重都在哪里"],
  "before-W-split": [
    "A block of width d keeps 12d² weights in its matrices: attention 4d² (query, key, value and output, each d × d) and the FFN 8d² (a hidden layer four times as wide, paid twice: once going up, once coming down). Drag d_model and watch the two bars, or use the buttons for GPT-2 small's 768 or a narrow 64.",
    "宽度为 d 的块，矩阵里共有 12d² 个权重：注意力占 4d²（查询、键、值、输出四个矩阵，每个 d × d），FFN 占 8d²（隐藏层宽 4 倍，要用两个矩阵：上投影一个，下投影一个）。拖动 d_model 看两根条形怎么变，或者用按钮直接跳到 GPT-2 small 的 768，或很窄的 64。",
  ],
  "after-W-split": [
    "The share never moves with d: it is a ratio, not a quantity. Whatever the width, two thirds of a block's matrix weights belong to the FFN, as long as the block is built like GPT-2's: an FFN four times as wide, with two matrices. A block built otherwise has its own share, fixed by its shape, not by its width.",
    "这个比例从不随 d 变化：它是个比值，不是个数量。无论多宽，一个块矩阵权重的三分之二都归 FFN，前提是这个块的结构和 GPT-2 的一样：FFN 宽 4 倍，有两个矩阵。结构不同的块有自己的比例，由结构决定，同样与宽度无关。",
  ],
  "W-split.told": [
    "At d = {d}: attention {att}, the FFN {ffn}, together 12d² = {block}, and the FFN's share is {share}.",
    "d = {d} 时：注意力 {att} 个，FFN {ffn} 个，合计 12d² = {block} 个，FFN 占 {share}。",
  ],
  "W-split.told.full": [
    "A real GPT-2 block of this width also carries {biases} biases and {norms} weights in its two LayerNorms, 13d = {extra} in all: {full} parameters, not {block}.",
    "同样宽度的真实 GPT-2 块还带着 {biases} 个偏置，两个 <code>LayerNorm</code> 里还有 {norms} 个权重，合计 13d = {extra} 个：一共 {full} 个参数，而不是 {block}。",
  ],
  "W-split.told.gpt2.here": [
    "That is why the depth widget above counts {g} per block for GPT-2 small where this one says {gm}: the {ge} between them are biases and norms, not matrices.",
    "这就是为什么上面深度那个组件给 GPT-2 small 每块算的是 {g}，这里却是 {gm}：两者差的 {ge} 个是偏置和归一化，不是矩阵。",
  ],
  "W-split.told.gpt2": [
    "GPT-2 small's own block (d = 768), the one the depth widget above counts, is {g}: {gm} in matrices and {ge} in biases and norms.",
    "GPT-2 small 自己的块（d = 768），也就是上面深度组件算的那个，有 {g} 个参数：矩阵里 {gm} 个，偏置和归一化 {ge} 个。",
  ],
  "W-split.told.model": [
    "{model}, the model on this page, is built otherwise: {why}. So its FFN holds {share} of the block's attention and FFN weights, {ffn} of {both}, not two thirds.",
    "本页的模型 {model} 结构不同：{why}。所以它的 FFN 占一个块里注意力和 FFN 权重的 {share}，即 {both} 个中的 {ffn} 个，而不是三分之二。",
  ],
  "W-split.told.model.same": [
    "{model}, the model on this page, is built that way: its FFN holds {share} of the block's attention and FFN weights, {ffn} of {both}.",
    "本页的模型 {model} 正是这样的结构：它的 FFN 占一个块里注意力和 FFN 权重的 {share}，即 {both} 个中的 {ffn} 个。",
  ],
  // the loaded model's block in its own family's words (block.js modelSplit: from its configuration)
  "W-split.why.swiglu": ["its FFN is gated, <code>SwiGLU</code>: a gate and an up projection, the gate through <code>SiLU</code>, the two multiplied, then a down projection, three matrices of d × {hidden} (d = {d})",
    "它的 FFN 带门控，是 <code>SwiGLU</code>：门控与上投影两个投影，门控一路经过 <code>SiLU</code>，两者相乘后再经下投影，共三个 d × {hidden} 的矩阵（d = {d}）"],
  "W-split.why.geglu": ["its FFN is gated, <code>GeGLU</code>: a gate and an up projection, the gate through {act}, the two multiplied, then a down projection, three matrices of d × {hidden} (d = {d})",
    "它的 FFN 带门控，是 <code>GeGLU</code>：门控与上投影两个投影，门控一路经过 {act}，两者相乘后再经下投影，共三个 d × {hidden} 的矩阵（d = {d}）"],
  "W-split.act.gelu-tanh": ["<code>GELU</code> (its <code>tanh</code> approximation)", "<code>GELU</code>（<code>tanh</code> 近似）"],
  "W-split.act.gelu": ["<code>GELU</code>", "<code>GELU</code>"],
  "W-split.why.heads": ["its {heads} heads are {hd} numbers wide each, so Q and the output projection are d × {qd}, not d × d",
    "它的 {heads} 个头每个宽 {hd}，所以 Q 和输出投影是 d × {qd}，不是 d × d"],
  "W-split.why.gelu": ["its FFN has two matrices of d × {hidden} (d = {d}), not d × 4d", "它的 FFN 有两个 d × {hidden} 的矩阵（d = {d}），不是 d × 4d"],
  "W-split.why.kv": [({ kv }) => `its {heads} query heads share ${plural(kv, "{kv} KV head", "{kv} KV heads")}, so K and V are narrower than d × d`,
    "它的 {heads} 个查询头共用 {kv} 个 KV 头，所以 K 和 V 比 d × d 窄"],
  "W-split.runs-on": ["Arithmetic on the width you choose (12d² per block); no model is run. The last sentence counts the loaded model's own blocks.",
    "按你选的宽度做算术（每个块 12d²）；不运行模型。最后一句数的是本页所加载模型自己的块。"],
  "W-split.presets": ["presets", "预设"],
  "W-split.preset.768": ["d = 768 (GPT-2 small)", "d = 768（GPT-2 small）"],
  "W-split.preset.64": ["d = 64 (tiny)", "d = 64（很窄）"],
  "W-split.attention": ["attention 4d²", "注意力 4d²"],
  "W-split.ffn": ["FFN 8d²", "FFN 8d²"],
  "W-split.chart": ["one block at d = {d}", "d = {d} 时的一个块"],
  "W-split.axis": ["weights in the matrices", "矩阵里的权重数"],
  "W-split.readout": ["d = {d}: 12d² = {block} weights per block; the FFN holds {share}",
    "d = {d}：每个块 12d² = {block} 个权重；FFN 占 {share}"],

  // W-norm
  "title-W-norm": ["Pre-norm or post-norm: what the gradient has to cross", "前置还是后置归一化：梯度要穿过什么"],
  "before-W-norm": [
    "The last choice inside a block is where its norms go. Toggle the two designs. The picture stacks the loaded model's blocks (the first two and the last) on the stream, the thick vertical line, from the embedding at the top down to the end of the stack at the bottom; the dashed line is the gradient on its way back up from there to the embedding, and every norm inside the blocks it has to pass through is numbered.",
    "块里最后一个选择，是归一化放在哪里。在两种设计之间切换看看。图中把本页模型的块（前两个和最后一个）沿着残差流，也就是那条粗竖线，从顶部的嵌入一直叠到底部这摞块的末端；虚线是梯度从末端往上回到嵌入的路，它在块里每穿过一个归一化，就标一个号。",
  ],
  "after-W-norm": [
    "Post-norm was the 2017 design, and deep post-norm stacks are hard to train: the gradient is rescaled at every norm on its way down. Pre-norm keeps the stream clean, and that one choice is a large part of why GPT-2, Llama and nearly every model since train stably past a hundred blocks.",
    "后置归一化是 2017 年最初的设计，叠得很深的后置模型很难训练：梯度一路往回，每过一个归一化就被缩放一次。前置归一化让残差流保持干净，GPT-2、Llama 以及之后几乎所有模型能稳定训练到上百个块，很大程度上就靠这一个选择。",
  ],
  "W-norm.told.pre": [
    "Pre-norm: every norm sits on a branch and normalizes only that branch's copy. Going back through all {n} blocks, the gradient runs down the bare stream and crosses {crossed} norms inside them. The final norm after the last block is outside the blocks: the gradient passes it once, on its way in, whatever the blocks do.",
    "前置归一化：每个归一化都在支路上，只处理那条支路的副本。梯度沿着光秃秃的残差流穿过全部 {n} 个块，在块里经过的归一化是 {crossed} 个。最后一个块之后的最终归一化在块外：不管块里怎样，梯度进来时都只穿过它一次。",
  ],
  "W-norm.told.post": [
    "Post-norm: after every add the stream itself goes through a norm, {per} per block (one after attention, one after the FFN). Going back through all {n} blocks, the gradient crosses {crossed} of them: norms in every block, each one rescaling it.",
    "后置归一化：每次相加之后，残差流本身都要过一次归一化，每个块 {per} 个（注意力之后一个，FFN 之后一个）。梯度穿过全部 {n} 个块，要经过 {crossed} 个归一化：每个块里都有，每一个都会把它重新缩放。",
  ],
  "W-norm.told.model.pre": ["The model on this page is pre-norm.", "本页的模型用的是前置归一化。"],
  "W-norm.told.model.post": ["The model on this page is post-norm.", "本页的模型用的是后置归一化。"],
  "W-norm.told.norms": ["Each of {model}'s blocks holds {n} norms, one before each branch.", "{model} 的每个块里有 {n} 个归一化，每条支路之前一个。"],
  "W-norm.told.norms.after": [
    "Each of {model}'s blocks holds {n} norms: one before each branch, and one on each branch's output before the add (drawn after the sublayer). Those two stay on the branches in either placement, so the gradient's way back along the stream never crosses them.",
    "{model} 的每个块里有 {n} 个归一化：每条支路之前一个，每条支路的输出在加回之前再过一个（画在子层之后）。后两个不论哪种放法都留在支路上，所以梯度沿残差流回去时从不穿过它们。",
  ],
  "W-norm.told.qk": ["Inside attention it also normalizes each head's queries and keys, before <code>RoPE</code>.",
    "在注意力内部，它还会在 <code>RoPE</code> 之前对每个头的查询和键做归一化。"],
  "W-norm.runs-on": ["Draws {model}'s own blocks and counts their norms. The other placement is drawn on the same blocks, for comparison.",
    "画的是 {model} 自己的块，数的是块里的归一化。另一种放法也画在同样的块上，用来对比。"],
  "W-norm.legend": ["Where the norm sits", "归一化放在哪里"],
  "W-norm.pre": ["pre-norm (GPT-2, Llama)", "前置归一化（GPT-2、Llama）"],
  "W-norm.post": ["post-norm (2017)", "后置归一化（2017）"],
  "W-norm.key.stream": ["the stream (the skip path)", "残差流（跳连通路）"],
  "W-norm.key.gradient": ["the gradient, back to the embedding", "梯度回到嵌入的路"],
  "W-norm.key.norm": ["a norm", "归一化"],
  "W-norm.box.embedding": ["embedding", "嵌入"],
  "W-norm.box.norm": ["norm", "归一化"],
  "W-norm.box.attention": ["attention", "注意力"],
  "W-norm.box.ffn": ["FFN", "FFN"],
  "W-norm.box.top": ["end of the stack: final norm, logits", "这摞块的末端：最终归一化、logits"],
  "W-norm.more": ["blocks {a} to {b}, the same", "第 {a} 到第 {b} 块，结构相同"],
  "W-norm.block": ["block {b}", "第 {b} 块"],
  "W-norm.count.pre": ["norms the gradient crosses inside the blocks: {n}", "梯度在块里穿过的归一化：{n} 个"],
  "W-norm.count.post": ["norms the gradient crosses inside the blocks: {n} ({per} in each of {layers} blocks)",
    "梯度在块里穿过的归一化：{n} 个（{layers} 个块，每块 {per} 个）"],
  "W-norm.aria.pre": ["pre-norm over {layers} blocks: the norms sit on the branches; the gradient's way back along the stream crosses {n} norms inside the blocks",
    "前置归一化，共 {layers} 个块：归一化都在支路上；梯度沿残差流回去，在块里经过 {n} 个归一化"],
  "W-norm.aria.post": ["post-norm over {layers} blocks: a norm on the stream after every add; the gradient's way back crosses {n} norms inside the blocks",
    "后置归一化，共 {layers} 个块：每次相加后残差流上都有一个归一化；梯度回去要在块里经过 {n} 个归一化"],
  "W-norm.readout.pre": ["pre-norm: the gradient crosses {n} norms inside the {layers} blocks on its way back",
    "前置归一化：梯度穿过 {layers} 个块回到嵌入，在块里经过 {n} 个归一化"],
  "W-norm.readout.post": ["post-norm: the gradient crosses {n} norms inside the {layers} blocks on its way back ({per} per block)",
    "后置归一化：梯度穿过 {layers} 个块回到嵌入，在块里经过 {n} 个归一化（每块 {per} 个）"],
};
