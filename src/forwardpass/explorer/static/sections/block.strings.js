// §01–§02 Inside a block: every word of the section, [English, Chinese].

export default {
  "title-s01": ["2. Inside a block", "2. 块的内部"],
  "intro-s01": [
    "A block has two branches, attention and the feed-forward network (FFN). Each reads a normalized copy of the stream, computes, and adds its result back to the stream.",
    "一个块有两条支路：注意力和前馈网络（FFN）。每条支路读取残差流的一份归一化副本，计算后把结果加回残差流。",
  ],

  // W-block-steps
  "title-W-block-steps": ["Fork, compute, merge", "分叉、计算、汇合"],
  "before-W-block-steps": [
    "Step through one block. The picture shows the main line and the two branches that fork off it and merge back; the bars show how large the last token's stream is going into and out of every third block.",
    "逐步查看一个块。图中是主干和从它分出又汇回的两条支路；条形图显示最后一个词元的残差流在每隔两个块的进出时有多大。",
  ],
  "after-W-block-steps": ["The stream only grows by what the branches add. Nothing on the main line is ever overwritten.",
    "残差流只会因支路加入的内容而增长，主干上的内容从不被覆盖。"],
  "W-block-steps.prev": ["previous step", "上一步"],
  "W-block-steps.next": ["next step", "下一步"],
  "W-block-steps.step.0": ["read the stream", "读取残差流"],
  "W-block-steps.step.1": ["normalize a copy", "对一份副本做归一化"],
  "W-block-steps.step.2": ["attention on the copy", "在副本上做注意力"],
  "W-block-steps.step.3": ["add it back", "把结果加回残差流"],
  "W-block-steps.step.4": ["normalize a copy", "再对一份副本做归一化"],
  "W-block-steps.step.5": ["FFN on the copy", "在副本上跑 FFN"],
  "W-block-steps.step.6": ["add it back", "把结果加回残差流"],
  "W-block-steps.chart": ["size of the stream (last token) in and out", "残差流（最后一个词元）进出时的大小"],
  "W-block-steps.bar": ["block {b}", "第 {b} 块"],
  "W-block-steps.bar-text": ["|stream| {a} → {b}", "|残差流| {a} → {b}"],
  "W-block-steps.main": ["the stream (main line)", "残差流（主干）"],
  "W-block-steps.attn": ["norm → attention", "归一化 → 注意力"],
  "W-block-steps.ffn": ["norm → FFN", "归一化 → FFN"],
  "W-block-steps.aria": ["a block: the stream runs straight through; attention and the FFN each fork off a normalized copy and add their output back",
    "一个块：残差流笔直穿过；注意力和 FFN 各自从一份归一化副本分出，再把输出加回来"],
  "W-block-steps.readout": ["step {at} of {n}: {step}", "第 {at} 步（共 {n} 步）：{step}"],

  // W-reach and W-attention share their controls' names
  "block.token": ["Token", "词元"],
  "block.layer": ["Layer", "层"],
  "block.head": ["Head", "注意力头"],

  // W-reach
  "title-W-reach": ["Attention looks back; the FFN looks at one token", "注意力向前看，FFN 只看一个词元"],
  "before-W-reach": [
    "Pick a token, a layer and a head. The bars are that head's real attention weights over the tokens up to the one picked.",
    "选一个词元、一层和一个注意力头。条形是这个头在所选词元及其之前各词元上的真实注意力权重。",
  ],
  "after-W-reach": [
    "The weights add up to one and never reach a later token. The FFN, by contrast, reads only the picked token's own vector.",
    "权重之和为一，而且从不落到后面的词元上。相比之下，FFN 只读取所选词元自己的向量。",
  ],
  "W-reach.chart": ["layer {layer}, head {head}: where {piece} looks", "第 {layer} 层、第 {head} 个头：{piece} 看向哪里"],
  "W-reach.readout": [
    ({ n }) => (n === 1
      ? "attention reads the one position there is, {keep} ({piece}, {w}); the FFN reads only position {keep}"
      : "attention reads all {n} positions up to {keep} (most: {piece}, {w}); the FFN reads only position {keep}"),
    "注意力读取位置 {keep} 及之前的全部 {n} 个位置（权重最大的是 {piece}，{w}）；FFN 只读位置 {keep}",
  ],

  // W-attention
  "title-W-attention": ["Attention, opened up", "打开注意力"],
  "before-W-attention": [
    "The same head, step by step: the query of the picked token meets every key (q·k), the scores are scaled by 1/√head_dim, later tokens are masked out, softmax turns the rest into weights, and the output is the weighted sum of the values.",
    "同一个头，一步一步来：所选词元的查询向量与每个键相乘（q·k），分数乘以 1/√head_dim，后面的词元被遮盖，softmax 把剩下的变成权重，输出是各值向量的加权和。",
  ],
  "after-W-attention": [
    "Masked scores become exactly zero weight after softmax. The output is a blend of value vectors, dominated by the keys whose scores stood out.",
    "被遮盖的分数经过 softmax 后权重恰好为零。输出是值向量的混合，由分数突出的那些键主导。",
  ],
  "W-attention.caption": ["One query against every key", "一个查询对所有的键"],
  "W-attention.col.key": ["key", "键"],
  "W-attention.col.dot": ["q·k", "q·k"],
  "W-attention.col.scaled": ["× {scale}", "× {scale}"],
  "W-attention.col.mask": ["mask", "遮盖"],
  "W-attention.col.weight": ["softmax weight", "softmax 权重"],
  "W-attention.kept": ["kept", "保留"],
  "W-attention.later": ["later token: −∞", "后面的词元：−∞"],
  "W-attention.window": ["outside the window: −∞", "窗口之外：−∞"],
  "W-attention.readout": [
    "layer {layer}, head {head} (K/V head {kv}), query {piece}: scores × 1/√{hd} = {scale}; {masked} masked; most weight on {best} ({w}); output = Σ weight × value: [{out}, …] (length {norm})",
    "第 {layer} 层、第 {head} 个头（K/V 头 {kv}），查询 {piece}：分数 × 1/√{hd} = {scale}；{masked} 个被遮盖；权重最大的是 {best}（{w}）；输出 = Σ 权重 × 值：[{out}, …]（长度 {norm}）",
  ],

  // W-split
  "title-W-split": ["Where a block's weights live", "块的权重在哪里"],
  "before-W-split": ["Change d_model. Attention holds 4d² weights (query, key, value and output), the FFN 8d².",
    "改变 d_model。注意力有 4d² 个权重（查询、键、值和输出），FFN 有 8d² 个。"],
  "after-W-split": ["Whatever the width, the FFN holds two thirds of a block.", "无论宽度多少，FFN 都占一个块的三分之二。"],
  "W-split.runs-on": ["Arithmetic on the width you choose (12d² per block); no model is run.",
    "按你选的宽度做算术（每个块 12d²）；不运行模型。"],
  "W-split.attention": ["attention 4d²", "注意力 4d²"],
  "W-split.ffn": ["FFN 8d²", "FFN 8d²"],
  "W-split.chart": ["one block at d = {d}", "d = {d} 时的一个块"],
  "W-split.readout": ["d = {d}: 12d² = {block} weights per block; the FFN holds {share} — two thirds at every width",
    "d = {d}：每个块 12d² = {block} 个权重；FFN 占 {share}——任何宽度下都是三分之二"],

  // W-norm
  "title-W-norm": ["Pre-norm or post-norm", "前置归一化还是后置归一化"],
  "before-W-norm": [
    "Choose where the normalization sits: on the branch's copy (pre-norm) or on the stream after the add (post-norm, the 2017 design).",
    "选择归一化的位置：放在支路的副本上（前置），或放在相加之后的残差流上（后置，2017 年的设计）。",
  ],
  "after-W-norm": [
    "Pre-norm keeps the residual path clean, so a gradient reaches the first block without crossing a norm; post-norm puts one on that path in every block.",
    "前置归一化让残差通路保持干净，梯度不必穿过任何归一化就能到达第一个块；后置归一化则在每个块都往这条通路上放一个。",
  ],
  "W-norm.legend": ["Normalization", "归一化的位置"],
  "W-norm.pre": ["pre-norm (GPT-2, Llama)", "前置归一化（GPT-2、Llama）"],
  "W-norm.post": ["post-norm (2017)", "后置归一化（2017）"],
  "W-norm.box.stream": ["stream", "残差流"],
  "W-norm.box.norm": ["norm", "归一化"],
  "W-norm.box.sublayer": ["sublayer", "子层"],
  "W-norm.box.add": ["+ stream", "+ 残差流"],
  "W-norm.path.pre": ["gradient path: stream → + stream, no norm on it", "梯度路径：残差流 → + 残差流，途中没有归一化"],
  "W-norm.path.post": ["gradient path: crosses the norm in every block", "梯度路径：每个块都要穿过归一化"],
  "W-norm.aria.pre": ["pre-norm: the norm is on the branch, the residual path has none", "前置归一化：归一化在支路上，残差通路上没有"],
  "W-norm.aria.post": ["post-norm: the norm is on the residual path after the add", "后置归一化：归一化在相加之后的残差通路上"],
  "W-norm.readout.post": [
    "post-norm: the residual path itself passes through {n} normalizations (one per block, N = {layers}) on the way back to the embedding",
    "后置归一化：回到嵌入的路上，残差通路本身要穿过 {n} 次归一化（每块一次，N = {layers}）",
  ],
  "W-norm.readout.pre": ["pre-norm: the norm touches only the branches; the gradient crosses {n} norms on the residual path",
    "前置归一化：归一化只碰支路；梯度在残差通路上穿过 {n} 次归一化"],
};
