// W-mechanism (one block opened on the reader's token): every word of the widget, [English, Chinese]. The names of
// vectors and matrices (x, h, W_Q …) are math, the same in both languages; a family's own words (its activation,
// its norms) come from the model's config through the server, never from a family named here.

export default {
  "title-W-mechanism": ["One block, opened on your token", "拆开一个块：跟着你的词元走一遍"],
  "before-W-mechanism": [
    "Pick a token of your prompt, a block and a head, then step through the block with the arrows or the stage buttons. Every number is the model's own tensor, recorded from its modules as the block runs on your prompt. A vector of hundreds of numbers is shown by its first few entries and a strip of the whole: each cell holds the largest entry of its run, blue below zero and orange above; the lit cell holds the numbers written out. Shapes are given in brackets.",
    "选一个提示词里的词元、一个块和一个注意力头，再用箭头或步骤按钮一步步走过这个块。这里的每个数都是模型自己的张量，是这个块在你的提示词上运行时从它的各个模块里记录下来的。一个有几百个数的向量，只写出开头几个，再用一条色带画出全部：每格是该段里绝对值最大的数，负为蓝、正为橙；加框的那一格就是写出来的那几个数。括号里是形状。",
  ],
  "after-W-mechanism": [
    "That is everything a block does to one token: two normalized copies, two branches, two adds. The next block starts from the stream this one left, with weights of its own.",
    "一个块对一个词元做的事就是这些：两份归一化副本，两条支路，两次相加。下一个块从这个块留下的残差流接着算，用的是它自己的权重。",
  ],

  // controls
  "mech.token": ["Token", "词元"],
  "mech.layer": ["Block", "块"],
  "mech.head": ["Head", "注意力头"],
  "mech.prev": ["previous stage", "上一步"],
  "mech.next": ["next stage", "下一步"],
  "mech.stages": ["the block's stages, in order", "块内的各个步骤，按顺序排列"],
  "mech.option": ["{i}: {piece}", "{i}：{piece}"],

  // the stages, as their buttons and the readout name them
  "mech.stage.embedding": ["embedding row", "嵌入行"],
  "mech.stage.stream": ["the stream", "残差流"],
  "mech.stage.attn_norm": ["norm before attention", "注意力前的归一化"],
  "mech.stage.qkv": ["Q, K, V", "Q、K、V"],
  "mech.stage.qk_norm": ["norm of q and k", "q 与 k 的归一化"],
  "mech.stage.rope": ["RoPE", "RoPE 旋转"],
  "mech.stage.scores": ["scores and mask", "分数与掩码"],
  "mech.stage.softmax": ["softmax: scores to weights", "softmax：分数变权重"],
  "mech.stage.weighted_sum": ["weighted sum of V", "对 V 加权求和"],
  "mech.stage.heads": ["heads joined, W_O", "拼接各头，乘 W_O"],
  "mech.stage.attn_post_norm": ["norm after attention", "注意力后的归一化"],
  "mech.stage.residual_attn": ["add to the stream", "加回残差流"],
  "mech.stage.ffn_norm": ["norm before the FFN", "FFN 前的归一化"],
  "mech.stage.gate_up": ["gate and up", "门控与上投影"],
  "mech.stage.up": ["up projection", "上投影"],
  "mech.stage.activation": ["activation", "激活函数"],
  "mech.stage.down": ["down projection", "下投影"],
  "mech.stage.ffn_post_norm": ["norm after the FFN", "FFN 后的归一化"],
  "mech.stage.residual_ffn": ["add to the stream again", "再加回残差流"],

  "mech.readout": ["Stage {at} of {n}: {stage} · block {layer}, head {head}, token {token} {piece}",
    "第 {at} 步（共 {n} 步）：{stage} · 第 {layer} 块，第 {head} 个头，词元 {token} {piece}"],
  // a stage every head shares (the norms, the adds, the FFN): no head named
  "mech.readout.block": ["Stage {at} of {n}: {stage} · block {layer}, token {token} {piece}",
    "第 {at} 步（共 {n} 步）：{stage} · 第 {layer} 块，词元 {token} {piece}"],
  "mech.aria": ["{stage}: the vectors {names}", "{stage}：向量 {names}"],
  "mech.legend": ["each cell: the largest entry of its run; blue below 0, orange above",
    "每格取该段中绝对值最大的数；负为蓝，正为橙"],

  // the pictures' words
  "mech.table": ["embedding table E: {rows} × {cols} (rows near id {id} shown)", "嵌入表 E：{rows} × {cols}（只画出编号 {id} 附近的几行）"],
  "mech.scale": ["× √{d} = {s}", "× √{d} = {s}"],
  "mech.stream": ["the stream block {layer} reads: {shape}; row {t} is this token's",
    "第 {layer} 块读入的残差流：{shape}；第 {t} 行属于这个词元"],
  "mech.rms": ["<code>rms</code> = √(<code>mean</code>(x²) + ε) = {rms}   (ε = {eps})",
    "<code>rms</code> = √(<code>mean</code>(x²) + ε) = {rms}   （ε = {eps}）"],
  "mech.layernorm": ["mean {mean}, deviation √(var + ε) = {std}", "均值 {mean}，标准差 √(方差 + ε) = {std}"],
  "mech.norm.hat": ["{x} ÷ {rms}", "{x} ÷ {rms}"],
  "mech.norm.out": ["{hat} ⊙ {gain}", "{hat} ⊙ {gain}"],
  "mech.product": ["{out} = {w} · {x}:  ({rows} × {cols}) · ({cols}) → ({rows})",
    "{out} = {w} · {x}：({rows} × {cols}) · ({cols}) → ({rows})"],
  "mech.sum": ["{out}₀ = {terms} + … ({n} terms) = {value}", "{out}₀ = {terms} + …（共 {n} 项）= {value}"],
  "mech.sum.bias": ["{out}₀ = {terms} + … ({n} terms) + b₀ = {value}", "{out}₀ = {terms} + …（共 {n} 项）+ b₀ = {value}"],
  "mech.shares": [({ count }) => (count === 1 ? "query head {list} has K/V head {g} to itself" : "query heads {list} share K/V head {g}"),
    ({ count }) => (count === 1 ? "查询头 {list} 独用 K/V 头 {g}" : "查询头 {list} 共用 K/V 头 {g}")],
  "mech.heads.joined": ["the {n} heads side by side: {n} × {hd} = {total}; head {h} lit",
    "{n} 个头并排：{n} × {hd} = {total}；第 {h} 个头加框"],
  "mech.rope.pair": ["pair {i}", "第 {i} 对"],
  "mech.rope.angle": ["{a} rad", "{a} 弧度"],
  "mech.rope.key": ["dashed: before, solid: after the turn", "虚线：旋转前；实线：旋转后"],
  "mech.rope.chart": ["angle of each of the {n} pairs at position {t} (radians, log scale)",
    "位置 {t} 处 {n} 对各自转过的角度（弧度，对数刻度）"],
  "mech.rope.axis": ["pair i", "第 i 对"],
  "mech.rope.score": ["score with key {key} {piece}, {dist} back: {before} before RoPE, {after} after",
    "与往前数第 {dist} 个词元（位置 {key} 的 {piece}）的键的分数：RoPE 前 {before}，RoPE 后 {after}"],
  "mech.col.key": ["key", "键"],
  "mech.col.score": ["q·k × {scale}", "q·k × {scale}"],
  "mech.col.weight": ["weight", "权重"],
  "mech.masked": ["later: −∞", "在后面：−∞"],
  "mech.window": ["out of window: −∞", "在窗口外：−∞"],
  "mech.more": [({ n }) => (n === 1 ? "one more key, under {w}" : "{n} more keys, each under {w}"),
    "另外 {n} 个键，权重都低于 {w}"],
  "mech.sum1": ["Σ = {sum}", "Σ = {sum}"],
  "mech.ws.shown": [({ n, of }) => (n < of ? "the {n} most weighted of {of} values"
    : of === 1 ? "the only value it may read" : "all {of} values it may read"),
  ({ n, of }) => (n < of ? "{of} 个值向量中权重最大的 {n} 个" : "它能读到的全部 {of} 个值向量")],
  "mech.act.chart": ["φ = {fn} over −5 … 5; the first entries of {x} marked", "φ = {fn}，画在 −5 … 5 上；标出 {x} 的前几个值"],
  "mech.fn.silu": ["<code>SiLU</code>(x) = x · σ(x)", "<code>SiLU</code>(x) = x · σ(x)"],
  "mech.fn.gelu_tanh": ["<code>GELU</code>, tanh approximation", "<code>GELU</code>（<code>tanh</code> 近似）"],
  "mech.fn.gelu": ["<code>GELU</code>", "<code>GELU</code>"],
  "mech.next-block": ["→ the input of block {b}", "→ 第 {b} 块的输入"],
  "mech.final": ["→ the final norm", "→ 最后的归一化"],

  // the numbered prose, one paragraph per stage
  "mech.told.embedding": [
    "Token {t} {piece} has id {id}: its vector is row {id} of the {vocab}-row embedding table, {d} numbers learned in training, the first {e0}, {e1}, {e2}.",
    "词元 {t} {piece} 的编号是 {id}：它的向量就是 {vocab} 行嵌入表的第 {id} 行，训练学来的 {d} 个数，开头是 {e0}、{e1}、{e2}。"],
  "mech.told.embedding.scale": [
    "This model multiplies the row by √{d} = {s}, so the stream starts at norm {n}, not {n0}.",
    "这个模型还把这一行乘以 √{d} = {s}，所以残差流一开始的范数是 {n}，而不是 {n0}。"],
  "mech.told.embedding.position": [
    "Its position's own row is added: the stream starts as e + p, norm {n}.",
    "再加上它所在位置的那一行：残差流从 e + p 开始，范数 {n}。"],
  "mech.told.stream.first": [
    "Block 1 reads the embedding itself: nothing has been added to the stream yet (norm {n}).",
    "第 1 块读入的就是嵌入本身：残差流里还没有加进任何东西（范数 {n}）。"],
  "mech.told.stream": [
    ({ before }) => `Block {layer} reads the stream after ${before === 1 ? "one block has" : "{before} blocks have"} added to it: norm {n}, where the embedding's was {n0}.`,
    "第 {layer} 块读入的，是前面 {before} 个块往里加过东西之后的残差流：范数 {n}，而嵌入的范数是 {n0}。"],
  "mech.told.rmsnorm": [
    "{what}: {x} is divided by its root mean square, {rms}, so every entry is on one scale; then each entry is multiplied by its own learned gain γ. The result, norm {n}, is a copy: the stream itself is untouched.",
    "{what}：{x} 除以它的均方根 {rms}，让所有分量处在同一尺度上；再把每个分量乘以各自学到的增益 γ。结果的范数是 {n}，它只是一份副本：残差流本身没有被改动。"],
  "mech.told.layernorm": [
    "{what}: {x} has its mean {mean} subtracted and is divided by its deviation {std}; then each entry is multiplied by its gain γ and shifted by its bias β. The result, norm {n}, is a copy: the stream itself is untouched.",
    "{what}：{x} 减去均值 {mean}，再除以标准差 {std}；然后每个分量乘以增益 γ、加上偏置 β。结果的范数是 {n}，它只是一份副本：残差流本身没有被改动。"],
  "mech.told.qk_norm": [
    "This model normalizes each head's q and k too, over their {hd} numbers, before RoPE turns them: q's RMS was {rq}, k's {rk}. Scores then cannot grow just because q or k is long.",
    "这个模型还会在 RoPE 旋转之前，对每个头的 q 和 k 按各自的 {hd} 个数做归一化：q 的均方根原本是 {rq}，k 的是 {rk}。这样分数不会仅仅因为 q 或 k 很长而变大。"],
  "mech.told.qkv.mha": [
    "Head {h}'s query is its {hd} rows of W_Q times h: ({hd} × {d}) · ({d}) → ({hd}); each entry of q is one row's dot product with h. K and V come the same way from the head's own rows of W_K and W_V: every one of the {nh} query heads has a K/V head of its own, so the cache holds {nh} keys per token.",
    "第 {h} 个头的查询向量，是 W_Q 中属于它的 {hd} 行乘以 h：({hd} × {d}) · ({d}) → ({hd})；q 的每个分量都是一行与 h 的点积。K 和 V 也一样，由这个头在 W_K 和 W_V 中自己的行算出：{nh} 个查询头各有自己的 K/V 头，所以缓存里每个词元存 {nh} 个键。"],
  "mech.told.qkv": [
    "Head {h}'s query is its {hd} rows of W_Q times h: ({hd} × {d}) · ({d}) → ({hd}); each entry of q is one row's dot product with h. K and V come from K/V head {g}, shared by query heads {list}: this model has {nh} query heads and {nkv} K/V heads, so each K/V head serves {group} of them and the cache holds {nkv} keys per token, not {nh}.",
    "第 {h} 个头的查询向量，是 W_Q 中属于它的 {hd} 行乘以 h：({hd} × {d}) · ({d}) → ({hd})；q 的每个分量都是一行与 h 的点积。K 和 V 来自第 {g} 个 K/V 头，由查询头 {list} 共用：这个模型有 {nh} 个查询头、{nkv} 个 K/V 头，每个 K/V 头服务 {group} 个查询头，所以缓存里每个词元存 {nkv} 个键，而不是 {nh} 个。"],
  "mech.told.rope": [
    "At position {t}, pair i of q (entries i and i + {half}) turns by {t} × θ^(−2i/{hd}), with θ = {theta}: pair 0 by {a0} rad, the last by {alast} rad. Each key is turned by its own position, so what the turn does to a score depends only on how far apart the two tokens are, not on where they stand: with key {key} {piece}, {dist} back, the score is {before} before the turn and {after} after.",
    "在位置 {t}，q 的第 i 对（第 i 和第 i + {half} 个分量）转过 {t} × θ^(−2i/{hd})，其中 θ = {theta}：第 0 对转 {a0} 弧度，最后一对只转 {alast} 弧度。每个键按它自己的位置旋转，所以旋转对分数的影响只取决于两个词元相隔多远，而与它们的绝对位置无关：与往前数第 {dist} 个词元（位置 {key} 的 {piece}）的键相比，旋转前分数是 {before}，旋转后是 {after}。"],
  "mech.told.rope.self": [
    "At position {t}, pair i of q (entries i and i + {half}) turns by {t} × θ^(−2i/{hd}), with θ = {theta}: pair 0 by {a0} rad, the last by {alast} rad. Each key is turned by its own position, so what the turn does to a score depends only on how far apart the two tokens are, not on where they stand; the first token has only itself to read, and its score is {after} either way.",
    "在位置 {t}，q 的第 i 对（第 i 和第 i + {half} 个分量）转过 {t} × θ^(−2i/{hd})，其中 θ = {theta}：第 0 对转 {a0} 弧度，最后一对只转 {alast} 弧度。每个键按它自己的位置旋转，所以旋转对分数的影响只取决于两个词元相隔多远，而与它们的绝对位置无关；第一个词元只能读它自己，旋转前后分数都是 {after}。"],
  "mech.told.scores": [
    ({ masked }) => `Each key up to this token scores q·k, times {scale}; ${masked === 0
      ? "no later token is left to mask, since this is the prompt's last"
      : masked === 1 ? "the one later token is set to −∞ so the token cannot read ahead"
        : "the {masked} later tokens are set to −∞ so the token cannot read ahead"}. The highest score, {best}, goes to {piece}.`,
    ({ masked }) => `到这个词元为止的每个键都算出 q·k，再乘以 {scale}；${masked === 0
      ? "它是提示词的最后一个词元，后面没有词元需要掩码"
      : "后面的 {masked} 个词元被设成 −∞，这个词元就无法偷看后文"}。最高分 {best} 属于 {piece}。`],
  "mech.scale.head_dim": ["{s} (1/√{hd})", "{s}（1/√{hd}）"],
  "mech.scale.query_scale": ["{s} (1/√{q}, this model's own query scale)", "{s}（1/√{q}，这个模型自己规定的查询缩放）"],
  "mech.told.softmax": [
    ({ n }) => (n === 1 ? "softmax of a single score is 1: the first token gives all its attention to itself, and a masked token gets exactly 0." : "softmax turns the {n} scores into weights: each is <code>exp</code>(score − {max}) over their total, so they sum to {sum}. The largest, {w}, goes to {piece}; a masked token gets exactly 0."),
    ({ n }) => (n === 1 ? "只有一个分数时 softmax 的结果就是 1：第一个词元把全部注意力都给了它自己，被掩码的词元权重恰好为 0。" : "softmax 把这 {n} 个分数变成权重：每个都是 <code>exp</code>(分数 − {max}) 除以它们的总和，所以加起来等于 {sum}。最大的权重 {w} 给了 {piece}；被掩码的词元权重恰好为 0。")],
  "mech.told.weighted_sum": [
    ({ n }) => (n === 1 ? "The first token reads only its own value vector, {hd} numbers, with weight 1: o_h = v, norm {norm}."
      : "The head's output is the weighted sum of the {n} value vectors it may read, {hd} numbers each: o_h = Σ w_j v_j, norm {norm}. Most of it comes from {piece} (weight {w})."),
    ({ n }) => (n === 1 ? "第一个词元只能读到它自己的值向量（{hd} 个数），权重为 1：o_h = v，范数 {norm}。"
      : "这个头的输出，是它能读到的 {n} 个值向量（每个 {hd} 个数）的加权和：o_h = Σ w_j v_j，范数 {norm}。其中大部分来自 {piece}（权重 {w}）。")],
  "mech.told.heads": [
    "The {nh} heads' outputs are laid side by side, {nh} × {hd} = {joined} numbers; head {h}'s are lit. W_O ({d} × {joined}) mixes them into one vector the stream's size: a, norm {norm}.",
    "{nh} 个头的输出并排拼在一起，共 {nh} × {hd} = {joined} 个数；第 {h} 个头的那一段加了框。W_O（{d} × {joined}）把它们混合成一个与残差流同样大小的向量：a，范数 {norm}。"],
  "mech.told.residual_attn": [
    "The stream adds attention's output: norm {x} plus a vector of norm {b} gives {out}. Nothing is replaced: the stream keeps its shape and what earlier blocks wrote into it.",
    "残差流加上注意力的输出：范数 {x} 加上一个范数 {b} 的向量，得到 {out}。没有任何东西被替换：残差流保持形状，也保留了前面各块写进去的内容。"],
  "mech.told.post_norm": [
    "This model normalizes what the branch returns before adding it: {rms} is its root mean square, and after the gain the branch has norm {n}.",
    "这个模型在把支路的输出加回去之前，先对它做归一化：它的均方根是 {rms}，乘上增益后支路的范数是 {n}。"],
  "mech.told.gate_up": [
    "Two projections of the normalized copy up to {hidden} numbers, {ratio} times the stream's width: the gate g = W_gate h′ and u = W_up h′.",
    "把归一化副本做两次投影，升到 {hidden} 个数，是残差流宽度的 {ratio} 倍：门控 g = W_gate h′，以及 u = W_up h′。"],
  "mech.told.up": [
    "One projection of the normalized copy up to {hidden} numbers, {ratio} times the stream's width: u = W_up h′.",
    "把归一化副本投影到 {hidden} 个数，是残差流宽度的 {ratio} 倍：u = W_up h′。"],
  "mech.told.activation.gated": [
    "This model's activation φ is {fn}. It bends the gate, {pos} of whose entries are positive, and the result multiplies u entry by entry: m = φ(g) ⊙ u, norm {norm}. Where φ(g) is near 0 the gate shuts that entry of u.",
    "这个模型的激活函数 φ 是 {fn}。它先把门控 g 弯折一下（g 中有 {pos} 的分量为正），再与 u 逐元素相乘：m = φ(g) ⊙ u，范数 {norm}。φ(g) 接近 0 的地方，门就把 u 的那个分量关掉了。"],
  "mech.told.activation": [
    "This model's activation φ is {fn}, applied to each of u's {hidden} entries ({pos} of them positive): m = φ(u), norm {norm}.",
    "这个模型的激活函数 φ 是 {fn}，逐个作用在 u 的 {hidden} 个分量上（其中 {pos} 为正）：m = φ(u)，范数 {norm}。"],
  "mech.told.down": [
    "W_down ({d} × {hidden}) brings m back to the stream's {d} numbers: f, norm {norm}.",
    "W_down（{d} × {hidden}）把 m 投影回残差流的 {d} 个数：f，范数 {norm}。"],
  "mech.told.residual_ffn": [
    "The stream adds the FFN's output: norm {x} plus a vector of norm {b} gives {out}, and that is exactly what block {next} reads.",
    "残差流加上 FFN 的输出：范数 {x} 加上一个范数 {b} 的向量，得到 {out}，这正是第 {next} 块读入的东西。"],
  "mech.told.residual_ffn.last": [
    "The stream adds the FFN's output: norm {x} plus a vector of norm {b} gives {out}. This was the last block: the stream goes on to the final norm and the unembedding.",
    "残差流加上 FFN 的输出：范数 {x} 加上一个范数 {b} 的向量，得到 {out}。这是最后一个块：残差流接下来进入最后的归一化和反嵌入。"],
};
