// §00 The pipeline: every word of the section, [English, Chinese]. Keys: title-/intro-/bridge- the section, title-/
// before-/after- a widget's prose, "<widget>.told…" the prose written from a widget's result, "<widget>.<what>" its
// controls, charts and readouts.

export default {
  "title-s00": ["1. The pipeline: from text to scores", "1. 流水线：从文字到分数"],
  "intro-s00": [
    "A language model reads text and answers with a score for every token it knows; the highest scores are the likeliest next tokens. Between the text and the scores sit six stages, always the same six: tokenize, look up the embedding and add position, run N identical blocks, normalize, unembed, read off the logits. Attention, the part everyone has heard of, lives inside the blocks. Everything around them is bookkeeping, and the bookkeeping is where the shapes are decided, so that is where we begin.",
    "语言模型读入一段文字，给它认识的每一个词元各打一个分：分数越高，越可能是下一个词元。从文字到分数，中间永远是同样的六个阶段：分词，查嵌入表并加入位置，依次经过 N 个相同的块，归一化，反嵌入，读出 logits。大家都听说过的注意力就在块里；块外面的几步只是准备和收尾的簿记，而张量的形状恰恰是在这些簿记里定下来的，所以我们从这里讲起。",
  ],
  "bridge-s00": [
    "Section 2 opens one block and looks at what gets added: two sublayers, what each of them can read, where their weights sit, and where the norm goes.",
    "第 2 节打开一个块，看看加进去的到底是什么：两个子层，各自能读到什么，权重放在哪里，归一化又该放在哪里。",
  ],

  // W-lookup
  "title-W-lookup": ["A token is a row number", "词元就是一个行号"],
  "before-W-lookup": [
    "The tokenizer cuts the prompt into pieces and swaps each piece for an id. An id is nothing more than a row number: the embedding table has one row for every token of the vocabulary, and the lookup copies that row out. Drag the slider along the prompt to see which row each token lands on; a token that occurs twice lights up both of its rows.",
    "分词器把提示词切成一个个片段，再把每个片段换成一个编号。编号不过是个行号：嵌入表给词表里的每个词元都留了一行，查表就是把那一行原样抄出来。沿着提示词拖动滑块，看每个词元落在哪一行；出现两次的词元，两行会一起亮起来。",
  ],
  "after-W-lookup": [
    "This is on purpose: at this point order does not exist yet. Position comes in at the very next step, either as a learned row added to the token's vector (GPT-2) or as a rotation of attention's queries and keys (RoPE, as in Llama and in this page's default model).",
    "这是有意为之：此时顺序还不存在。位置在紧接着的下一步才进来：要么是学出来的一行位置向量，直接加到词元的向量上（GPT-2 的做法）；要么是对注意力的查询和键按位置做旋转（旋转位置编码 <code>RoPE</code>，Llama 和本页默认的模型都用它）。",
  ],
  "W-lookup.told.same": [
    "In this prompt, positions {a} and {b} are both {piece}: the same id ({id}), so the same row, so the same vector. The server compared all {d} numbers of the two lookups, and they are identical. Nothing in that vector says which of the two came first.",
    "在这个提示词里，位置 {a} 和位置 {b} 都是 {piece}：同一个编号（{id}），于是同一行，于是同一个向量。运行本页的服务器把两次查表得到的 {d} 个数逐一比过，完全相同。这个向量里没有任何东西能说明两者谁先谁后。",
  ],
  "W-lookup.told.differ": [
    "In this prompt, positions {a} and {b} are both {piece} (id {id}), yet the server found their {d} numbers different: this model's lookup is more than copying a row.",
    "在这个提示词里，位置 {a} 和位置 {b} 都是 {piece}（编号 {id}），但运行本页的服务器发现两者的 {d} 个数并不相同：这个模型的查表不只是抄出一行。",
  ],
  "W-lookup.told.bytes-shared": [
    "In this prompt, positions {a} and {b} are both {piece} (id {id}): one byte, the last of {ca} at position {a} and the last of {cb} at position {b}. Two different characters, one id, so one row and one vector: the server compared all {d} numbers of the two lookups, and they are identical. Which character that byte belongs to is left for the later stages to work out from its neighbours.",
    "在这个提示词里，位置 {a} 和位置 {b} 都是 {piece}（编号 {id}）：同一个字节，在位置 {a} 是 {ca} 的最后一个字节，在位置 {b} 是 {cb} 的最后一个字节。两个不同的汉字，一个编号，于是同一行、同一个向量：运行本页的服务器把两次查表得到的 {d} 个数逐一比过，完全相同。这个字节属于哪个字，要留给后面的阶段根据它的邻居去判断。",
  ],
  "W-lookup.told.bytes": [
    "This model's vocabulary has no entry for most Chinese characters, so its tokenizer spells them in their <code>UTF-8</code> bytes, one to three bytes per token: here {char} is {spelled}.",
    "这个模型的词表里没有大多数汉字，分词器就按 <code>UTF-8</code> 字节来拼，每个词元一到三个字节：这里 {char} 拼成了 {spelled}。",
  ],
  // how every token piece on the page is written (lib/i18n.js pieceLabel), said once, under the first token table
  "W-lookup.writing": [
    "How a piece is written, here and on the whole page: in quotes, as the tokenizer has it (<tok>\" the\"</tok> starts with a space, <tok>\\n</tok> inside one is a line break); a piece of whitespace alone with marks, <tok>␣</tok> a space and <tok>↵</tok> a line break; <tok>⟨E7⟩</tok> one raw byte in hexadecimal, part of a character the vocabulary has no token for (<tok>⟨E7 8C⟩</tok>: two bytes in one token).",
    "片段的写法，这里和全页都一样：加引号，照分词器里的原样写（<tok>\" the\"</tok> 以空格开头，片段里的 <tok>\\n</tok> 是换行）；只有空白的片段用记号写，<tok>␣</tok> 是空格，<tok>↵</tok> 是换行；<tok>⟨E7⟩</tok> 是十六进制写出的一个原始字节，属于词表里没有对应词元的某个字符（<tok>⟨E7 8C⟩</tok>：一个词元里的两个字节）。",
  ],
  "W-lookup.told.none": [
    "This prompt uses no token twice. Type one that does (the default prompt has {piece} twice) to watch two positions share one row.",
    "这个提示词里没有重复的词元。换一个有重复的试试（默认提示词里 {piece} 出现了两次），就能看到两个位置共用一行。",
  ],
  "W-lookup.told.none-bare": [
    "This prompt uses no token twice. Type one that does to watch two positions share one row.",
    "这个提示词里没有重复的词元。换一个有重复的试试，就能看到两个位置共用一行。",
  ],
  "W-lookup.told.kin": [
    "By contrast, {a} at position {ia} (id {ida}) and {b} at position {ib} (id {idb}) are different tokens: a capital letter and a leading space are part of the piece, so one word can own two rows.",
    "相比之下，位置 {ia} 的 {a}（编号 {ida}）和位置 {ib} 的 {b}（编号 {idb}）是两个不同的词元：大写字母和开头的空格都算在片段里，所以同一个词可以占两行。",
  ],
  "W-lookup.position": ["Token position", "词元位置"],
  "W-lookup.caption": ["Tokens of the prompt", "提示词的词元"],
  "W-lookup.col.position": ["position", "位置"],
  "W-lookup.col.id": ["id", "编号"],
  "W-lookup.col.piece": ["piece", "片段"],
  "W-lookup.col.row": ["embedding row (first 8 of d_model)", "嵌入行（d_model 个数中的前 8 个）"],
  "W-lookup.readout": ["position {at}: {piece} is id {id}, row {id} of the {vocab}-row table",
    "位置 {at}：{piece} 的编号是 {id}，也就是 {vocab} 行嵌入表中编号为 {id} 的那一行（行号从 0 数起）"],
  "W-lookup.same": ["; positions {list} share that id and that row", "；位置 {list} 共用这个编号和这一行"],
  "W-lookup.kin": ["; {piece} at position {position} is another token, id {id}", "；位置 {position} 的 {piece} 是另一个词元，编号 {id}"],

  // W-stages
  "title-W-stages": ["Six stages, one of them N deep", "六个阶段，其中一个有 N 层深"],
  "before-W-stages": [
    "Here is the whole forward pass as one diagram, run on your prompt by the model above. Step through it with the arrows, or click a stage: the stage outlined in blue is the one running, the ticked ones above it have finished. Each arrow carries the shape of the tensor it hands on: (1 sequence, T tokens, d_model numbers per token).",
    "下面把整个前向传播画成一张图，由上面的模型处理你的提示词。用箭头按钮一步步走，或者直接点某个阶段：蓝框的是正在运行的阶段，它上面打了勾的都已跑完。每个箭头旁标着传下去的张量形状：(1 条序列, T 个词元, 每个词元 d_model 个数)。",
  ],
  "after-W-stages": [
    "The block stage is drawn taller because it is not one stage: it is N copies of the same block, stacked, and each copy hands on exactly the shape it was given, which is what lets them stack at all. N is the knob we turn next. Attention and its heads live inside that band, and so, in a model that rotates queries and keys by position (RoPE, like this one), does position.",
    "块这一段特意画得更高，因为它不是一个阶段，而是同一个块叠起来的 N 份；每一份交出去的形状和接过来的完全一样，所以才能一层层叠上去。N 就是我们接下来要转的旋钮。注意力和它的多个头都在这条带子里；像本页模型这样按位置旋转查询和键的模型（<code>RoPE</code>），位置信息也是在这里进来的。",
  ],
  "W-stages.told": [
    ({ t }) => (t === 1
      ? "Your prompt is 1 token, so the tokenizer hands on ids of shape {ids}; the embedding makes that {emb}; all {n} blocks ran, and each took and returned {block}; the unembedding widens the position to {logits}, a score for each of the {v} entries of the vocabulary. The last row picks the next token, and here it scores {piece} highest."
      : "Your prompt is {t} tokens, so the tokenizer hands on ids of shape {ids}; the embedding makes that {emb}; all {n} blocks ran, and each took and returned {block}; the unembedding widens every position to {logits}, a score for each of the {v} entries of the vocabulary. Only the last row picks the next token, and here it scores {piece} highest."),
    "你的提示词有 {t} 个词元，所以分词器交出的编号形状是 {ids}；嵌入把它变成 {emb}；{n} 个块全都跑了一遍，每个块接过 {block}，也交出 {block}；反嵌入把每个位置都扩成 {logits}，词表里的 {v} 个词元各得一个分数。真正用来挑下一个词元的只有最后一行，这里得分最高的是 {piece}。",
  ],
  "W-stages.prev": ["previous stage", "上一个阶段"],
  "W-stages.next": ["next stage", "下一个阶段"],
  "W-stages.stage.0": ["tokenize", "分词"],
  "W-stages.stage.1": ["embedding + position", "嵌入 + 位置"],
  "W-stages.stage.1.rope": ["embedding (position: RoPE, in attention)", "嵌入（位置由 RoPE 在注意力里加入）"],
  "W-stages.stage.2": ["{n} identical blocks", "{n} 个相同的块"],
  "W-stages.stage.3": ["final norm", "最终归一化"],
  "W-stages.stage.4": ["unembedding", "反嵌入"],
  "W-stages.stage.5": ["logits", "logits"],
  "W-stages.shape.0": ["text → ids {ids}", "文字 → 编号 {ids}"],
  "W-stages.shape.2": ["{n} × block: {a} → {b}", "{n} 个块：{a} → {b}"],
  "W-stages.shape.5": ["{logits}: the last row's {v} scores pick the next token", "{logits}：最后一行的 {v} 个分数挑出下一个词元"],
  "W-stages.readout": ["stage {at} of 6: {name} — {shape}", "第 {at} 个阶段（共 6 个）：{name}——{shape}"],
  "W-stages.input": ["your prompt, as text", "你的提示词（文字）"],
  "W-stages.carry.ids": ["ids {s}", "编号 {s}"],
  "W-stages.carry.next": ["the next token: {piece}", "下一个词元：{piece}"],
  "W-stages.what.0": ["Tokenize: the text becomes T ids, whole words or pieces of words.",
    "分词：文字变成 T 个编号，有的是整个词，有的是词的片段。"],
  "W-stages.what.1.rope": [
    "Embedding: each id fetches its row of the table, d_model = {d} numbers. This model adds no position here: inside attention it rotates queries and keys by their position (RoPE).",
    "嵌入：每个编号取出表中自己那一行，共 d_model = {d} 个数。这个模型不在这里加位置，而是在注意力内部按位置旋转查询和键（<code>RoPE</code>）。",
  ],
  "W-stages.what.1.learned": [
    "Embedding + position: each id fetches its row, and the row of its position is added to it: d_model = {d} numbers per token.",
    "嵌入加位置：每个编号取出自己那一行，再加上它所在位置的那一行：每个词元 d_model = {d} 个数。",
  ],
  "W-stages.what.2": ["{n} identical blocks: each reads the stream and adds into it, so the shape that comes out is the shape that went in.",
    "{n} 个相同的块：每个块读取残差流并往里加，所以出来的形状和进去的一样。"],
  "W-stages.what.3": ["Final norm: the stream is normalized once more on its way out of the stack.",
    "最终归一化：残差流离开这摞块之前，再做一次归一化。"],
  "W-stages.what.3.none": ["Final norm: this model has none; its norms sit inside the blocks, after each add.",
    "最终归一化：这个模型没有；它的归一化都在块里，跟在每次相加之后。"],
  "W-stages.what.4": ["Unembedding: each position's {d} numbers become {v} scores, one for every token of the vocabulary.",
    "反嵌入：每个位置的 {d} 个数变成 {v} 个分数，词表里每个词元一个。"],
  "W-stages.what.5": ["Logits: the last row scores every candidate for the next token ({piece} leads here); section 3 turns the scores into a choice.",
    "logits：最后一行给下一个词元的每个候选打分（这里领先的是 {piece}）；第 3 节讲怎样从分数里挑出一个。"],
  "W-stages.aria": [
    "the six stages top to bottom, stage {at} ({name}) lit; the block stage is a band of {n} stacked blocks; the shapes handed on: {shapes}",
    "从上到下的六个阶段，第 {at} 个（{name}）点亮；块这一段是 {n} 个叠在一起的块；依次传下去的形状：{shapes}",
  ],

  // W-depth
  "title-W-depth": ["Depth: N copies of one block", "深度：同一个块复制 N 份"],
  "before-W-depth": [
    "Turn the knob N. The width stays at GPT-2 small's d_model = 768 and nothing else changes, only how many blocks are stacked. The buttons jump to GPT-2 small's own depth and to four times it.",
    "转动旋钮 N。宽度固定在 GPT-2 small 的 d_model = 768，别的都不变，只改叠起来的块数。按钮可以直接跳到 GPT-2 small 自己的深度，或者它的四倍。",
  ],
  "after-W-depth": [
    "Depth multiplies one block; it never changes what a block is. So the next question is what a block does with the stream it is handed.",
    "深度只是把一个块乘上 N 倍，块本身是什么样并没有变。所以下一个问题是：块拿到残差流以后，对它做了什么。",
  ],
  "W-depth.told": [
    "GPT-2 small's own N = {n12} lands on {t12} parameters ({t12exact}); set N = {n12} and read it off the curve. Depth alone got it there: the same vocabulary, the same width, {n12} blocks of {block} each, on top of {outside} outside the blocks (the token and position tables, the final norm). Push N to {n48} and the count reaches {t48}, {r48}× as many: the width never moved, and the curve is a straight line.",
    "GPT-2 small 自己的 N = {n12} 落在 {t12}个参数（{t12exact}）；把 N 拨到 {n12}，就能从曲线上直接读出来。走到这一步全靠深度：词表没变，宽度没变，只是 {n12} 个各有 {block}个参数的块，再加上块外的 {outside}个参数（词元表、位置表和最终归一化）。把 N 推到 {n48}，参数量到了 {t48}，是原来的 {r48} 倍：宽度一点没动，曲线还是一条直线。",
  ],
  "W-depth.told.block": [
    "Each block is {block} parameters: {matrices} in its weight matrices (12d² at d = 768), {biases} in their biases and {norms} in its two LayerNorms.",
    "每个块有 {block} 个参数：权重矩阵里 {matrices} 个（d = 768 时的 12d²），偏置 {biases} 个，两个 <code>LayerNorm</code> 里 {norms} 个。",
  ],
  "W-depth.n": ["N, the number of blocks", "块数 N"],
  "W-depth.presets": ["presets", "预设"],
  "W-depth.preset.12": ["N = 12 (GPT-2 small)", "N = 12（GPT-2 small）"],
  "W-depth.preset.48": ["N = 48 (four times as deep)", "N = 48（深四倍）"],
  "W-depth.series": ["parameters", "参数量"],
  "W-depth.x": ["N, blocks", "块数 N"],
  "W-depth.y": ["parameters", "参数量（个）"],
  "W-depth.readout": [({ n }) => (n === 12
    ? "N = {n}: {total} parameters ({exact}), GPT-2 small itself; each block {block}"
    : "N = {n}: {total} parameters ({exact}), {ratio}× GPT-2 small's N = 12; each block {block}"),
  ({ n }) => (n === 12
    ? "N = {n}：共 {total}个参数（{exact}），就是 GPT-2 small 本身；每个块 {block}个"
    : "N = {n}：共 {total}个参数（{exact}），是 GPT-2 small（N = 12）的 {ratio} 倍；每个块 {block}个")],

  // W-residual
  "title-W-residual": ["The residual stream: add, never replace", "残差流：只加，不换"],
  "before-W-residual": [
    "Each of the N blocks is handed the residual stream and can do one of two things with it: add its output into it, or put its output in its place. Real models only add. The cells are a picture of the idea; the bars run the loaded model both ways. Switch to “replace” to see what is left when every sublayer overwrites the stream.",
    "N 个块里的每一个都拿到残差流，能做的只有两件事：把自己的输出加进去，或者用输出把它换掉。真实的模型只做加法。格子只是示意；条形图则真的用本页的模型把两种做法都跑了一遍。切换到“替换”，看看每个子层都覆盖残差流时还剩下什么。",
  ],
  "after-W-residual": [
    "That is the invariant worth an assertion (this engine checks it in its checked mode): at every layer boundary the stream keeps its shape, and every sublayer only adds into it.",
    "这就是值得写成断言的不变式（本引擎的检查模式就会检查它）：每一层的边界上，残差流都保持原来的形状，每个子层都只往里加。",
  ],
  "W-residual.told": [
    "Adding, the model's top next token is {a} at {pa}. Replacing, every sublayer throws away what came before it, and the top token becomes {r} at {pr}.",
    "用加法时，模型排第一的下一个词元是 {a}，占 {pa}。换成替换，每个子层都把前面写下的东西扔掉，排第一的变成了 {r}，占 {pr}。",
  ],
  "W-residual.told.kept": [
    "Both ways the stream kept its shape, {shape}, at all {n} block boundaries: its width was never the problem; losing what the earlier blocks wrote was.",
    "两种做法下，残差流在全部 {n} 个块的边界上都保持形状 {shape}：问题从来不在宽度，而在前面各块写下的内容被抹掉了。",
  ],
  "W-residual.told.changed": ["The stream's shape changed between blocks: {shape} at the first of {n} boundaries, not at all of them.",
    "残差流的形状在块之间变了：{n} 个边界中第一个是 {shape}，并非处处相同。"],
  "W-residual.legend": ["Each sublayer's output is", "每个子层的输出"],
  "W-residual.add": ["added to the stream", "加到残差流上"],
  "W-residual.replace": ["put in place of the stream", "替换掉残差流"],
  "W-residual.mode.add": ["add", "相加"],
  "W-residual.mode.replace": ["replace", "替换"],
  "W-residual.chart": ["the loaded model's next token, sublayers {mode}", "本页模型的下一个词元（子层{mode}）"],
  "W-residual.axis": ["probability", "概率"],
  "W-residual.row.0": ["embedding", "嵌入"],
  "W-residual.row.1": ["attention", "注意力"],
  "W-residual.row.2": ["FFN", "FFN"],
  "W-residual.cells.add": ["the stream's cells after the embedding, attention and FFN: {cells} (each sublayer adds into them)",
    "嵌入、注意力和 FFN 之后残差流的各个格子：{cells}（每个子层都往里加）"],
  "W-residual.cells.replace": ["the stream's cells after the embedding, attention and FFN: {cells} (each sublayer overwrites them)",
    "嵌入、注意力和 FFN 之后残差流的各个格子：{cells}（每个子层都把它们覆盖）"],
  "W-residual.readout": ["{mode}: the top next token is {piece} at {p}", "{mode}：排第一的下一个词元是 {piece}，占 {p}"],
  "W-residual.erased": [" — earlier blocks' work erased", "——前面各块的成果被抹掉了"],
};
