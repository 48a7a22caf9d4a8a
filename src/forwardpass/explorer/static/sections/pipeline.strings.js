// §00 The pipeline: every word of the section, [English, Chinese]. Keys: title-/intro- the section, title-/before-/
// after- a widget's prose, "<widget>.<what>" its controls, charts and readouts.

export default {
  "title-s00": ["1. The pipeline: from text to scores", "1. 流水线：从文字到分数"],
  "intro-s00": [
    "A language model turns text into one score for every token it knows. Six stages do it, and the middle one, a stack of identical blocks, does almost all of the work.",
    "语言模型把文字变成一组分数，词表里的每个词元各有一个。这要经过六个阶段，中间那个由一摞相同的块组成，几乎承担了全部计算。",
  ],

  // W-lookup
  "title-W-lookup": ["A token is a row number", "词元就是一个行号"],
  "before-W-lookup": [
    "The tokenizer cuts the prompt into pieces and gives each piece an id. That id is nothing more than a row number in the embedding table. Move the slider to pick a token; rows with the same id are highlighted.",
    "分词器把提示词切成片段，并给每个片段一个编号。这个编号只是嵌入表里的行号。拖动滑块选择一个词元，编号相同的行会被高亮。",
  ],
  "after-W-lookup": [
    "The same token always gets the same row, wherever it stands: nothing here knows about order yet. A leading space belongs to the piece, and so does case, so <tok>\"The\"</tok> at the start and <tok>\" the\"</tok> later are different tokens with different rows.",
    "同一个词元无论出现在哪里，取到的都是同一行：此时模型还不知道顺序。前导空格和大小写都属于片段本身，所以开头的 <tok>\"The\"</tok> 和后面的 <tok>\" the\"</tok> 是不同的词元，对应不同的行。",
  ],
  "W-lookup.position": ["Token position", "词元位置"],
  "W-lookup.caption": ["Tokens of the prompt", "提示词的词元"],
  "W-lookup.col.position": ["position", "位置"],
  "W-lookup.col.id": ["id", "编号"],
  "W-lookup.col.piece": ["piece", "片段"],
  "W-lookup.col.row": ["embedding row (first 8 of d_model)", "嵌入行（d_model 个数中的前 8 个）"],
  "W-lookup.readout": ["position {at}: {piece} is id {id}, row {id} of the {vocab}-row table",
    "位置 {at}：{piece} 的编号是 {id}，也就是 {vocab} 行嵌入表中的第 {id} 行"],
  "W-lookup.same": ["; positions {list} share that id and that row — no position yet",
    "；位置 {list} 共用这个编号和这一行——此时还没有位置信息"],
  "W-lookup.kin": ["; {piece} at position {position} is another token (id {id}): a leading space and capitals are part of the piece",
    "；位置 {position} 的 {piece} 是另一个词元（编号 {id}）：前导空格和大小写都算在片段里"],

  // W-stages
  "title-W-stages": ["Six stages, one of them repeated", "六个阶段，其中一个重复多次"],
  "before-W-stages": [
    "Step through the pipeline with the arrows. Each stage says the shape of what it hands on: T tokens, each a vector of d_model numbers.",
    "用箭头逐步查看流水线。每个阶段都标出它传给下一阶段的形状：T 个词元，每个是 d_model 个数的向量。",
  ],
  "after-W-stages": [
    "Only the block stage repeats. Its input and output have the same shape, which is exactly what lets blocks be stacked as deep as one likes.",
    "只有块这一阶段会重复。它的输入和输出形状相同，所以块可以一层层叠得任意深。",
  ],
  "W-stages.prev": ["previous stage", "上一个阶段"],
  "W-stages.next": ["next stage", "下一个阶段"],
  "W-stages.stage.0": ["tokenize", "分词"],
  "W-stages.stage.1": ["embedding + position", "嵌入 + 位置"],
  "W-stages.stage.2": ["N identical blocks", "N 个相同的块"],
  "W-stages.stage.3": ["final norm", "最终归一化"],
  "W-stages.stage.4": ["unembedding", "反嵌入"],
  "W-stages.stage.5": ["logits", "logits（分数）"],
  "W-stages.shape.0": ["text → ids (T)", "文字 → 编号（T 个）"],
  "W-stages.shape.2": ["{n} × block: (T, {d}) → (T, {d})", "{n} 个块：(T, {d}) → (T, {d})"],
  "W-stages.shape.5": ["(T, {v}) scores", "(T, {v}) 个分数"],
  "W-stages.readout": ["stage {at} of 6: {name} — {shape}", "第 {at} 个阶段（共 6 个）：{name}——{shape}"],

  // W-depth
  "title-W-depth": ["Depth multiplies the parameters", "深度成倍增加参数"],
  "before-W-depth": ["Drag N to change how many blocks a GPT-2-sized model has (d_model 768).",
    "拖动 N，改变一个 GPT-2 规模模型（d_model 768）的块数。"],
  "after-W-depth": [
    "Every block brings the same number of weights, so the count grows in a straight line with depth; the embedding table is paid once.",
    "每个块带来同样多的权重，所以参数量随深度线性增长；嵌入表只算一次。",
  ],
  "W-depth.n": ["N blocks", "块数 N"],
  "W-depth.series": ["parameters", "参数量"],
  "W-depth.x": ["N, blocks", "块数 N"],
  "W-depth.y": ["parameters", "参数量（个）"],
  "W-depth.readout": ["N = {n}: {total} parameters ({exact}), {ratio}× N = 12; each block {block}",
    "N = {n}：共 {total}个参数（{exact}），是 N = 12 时的 {ratio} 倍；每个块 {block}"],

  // W-residual
  "title-W-residual": ["The residual stream: add, do not replace", "残差流：相加，而不是替换"],
  "before-W-residual": [
    "Picture the stream as a row of cells that every sublayer adds into. Switch to \"put in place of the stream\" to make each sublayer overwrite the stream instead, on the real model.",
    "把残差流想象成一排格子，每个子层都把结果加进去。切换到“替换掉残差流”，让每个子层改为覆盖残差流，在真实模型上看看结果。",
  ],
  "after-W-residual": ["Adding keeps what earlier blocks wrote; replacing throws it away, and the prediction falls apart.",
    "相加保留了前面各块写下的内容；替换则把它们丢掉，预测随之崩溃。"],
  "W-residual.legend": ["Each sublayer's output is", "每个子层的输出"],
  "W-residual.add": ["added to the stream", "加到残差流上"],
  "W-residual.replace": ["put in place of the stream", "替换掉残差流"],
  "W-residual.mode.add": ["add", "相加"],
  "W-residual.mode.replace": ["replace", "替换"],
  "W-residual.chart": ["next token, sublayers {mode}", "下一个词元（子层{mode}）"],
  "W-residual.row.0": ["embedding", "嵌入"],
  "W-residual.row.1": ["attention", "注意力"],
  "W-residual.row.2": ["FFN", "FFN"],
  "W-residual.cells.add": ["the stream's cells after the embedding, attention and FFN: {cells} (each sublayer adds into them)",
    "嵌入、注意力和 FFN 之后残差流的各个格子：{cells}（每个子层都往里加）"],
  "W-residual.cells.replace": ["the stream's cells after the embedding, attention and FFN: {cells} (each sublayer overwrites them)",
    "嵌入、注意力和 FFN 之后残差流的各个格子：{cells}（每个子层都把它们覆盖）"],
  "W-residual.readout": ["{mode}: the stream keeps its shape ({shape}) at all {n} boundaries; top next token {piece} at {p}",
    "{mode}：残差流在全部 {n} 个边界上都保持形状（{shape}）；下一个词元排第一的是 {piece}，占 {p}"],
  "W-residual.erased": [" — earlier blocks' work erased", "——前面各块的成果被抹掉了"],
};
