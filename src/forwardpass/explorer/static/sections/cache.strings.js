// §05 The KV cache. Every word of the section, [English, Chinese].

import { plural } from "../lib/i18n.js";

export default {
  "title-s05": ["5. The KV cache", "5. KV 缓存"],
  "intro-s05": [
    "Attention scores a new token's query (Q) against the key (K) of every token before it, then mixes those tokens' values (V). The keys and values were computed from the earlier tokens alone, and no block ever runs on an earlier token again, so once written they never change. The KV cache is simply an honest place to keep them: one key and one value per token, in every block. This section fills one up, weighs it, and then breaks it in the two ways real implementations have.",
    "注意力拿新词元的查询（Q）去和它前面每个词元的键（K）打分，再按分数把那些词元的值（V）混合起来。这些键和值只由更早的词元算出，产生它们的块也再不会在那些词元上重跑，所以它们一旦写下就不会再变。KV 缓存不过是老老实实存放它们的地方：每个块、每个词元，一个键加一个值。这一节先把一个缓存填起来，称一称它有多重，再用真实实现里出过的两种方式把它弄坏。",
  ],
  "bridge-s05": [
    "Keeping the cache honest is half of the story; paying for it is the other half. Section 6 puts numbers on what all of this costs to run: the weights read at every step, and the caches of many sequences side by side.",
    "让缓存保持正确是故事的一半，为它买单是另一半。第 6 节给这一切实际运行的代价标上数字：每一步要读的权重，以及许多条序列的缓存放在一起有多大。",
  ],
  "cache.step": ["Step", "步数"],
  "cache.context": ["Context (tokens)", "上下文（词元数）"],
  "cache.context-axis": ["context (tokens)", "上下文（词元数）"],
  "cache.bytes": [({ n }) => (n === "1" ? "{n} byte" : "{n} bytes"), "{n} 字节"],
  "cache.bytes-size": ["{n} bytes ({size})", "{n} 字节（{size}）"],

  // W-cache-fill
  "title-W-cache-fill": ["One pair per token, in every block", "每个词元，每个块一对"],
  "before-W-cache-fill": [
    "Drag the step slider through the same twelve greedy steps as in section 4. Each row is one block's keys (K) or values (V); each square is one token's vector, its position on the axis below. The orange squares are the pairs written at this step: all of the prompt's at step 1, then exactly one per step.",
    "拖动步数滑块，走一遍和第 4 节相同的十二步贪心生成。每一行是某个块的键（K）或值（V）；每个方格是一个词元的向量，它的位置标在下方的坐标轴上。橙色方格是这一步写入的键值对：第 1 步写入整个提示词的，之后每步恰好一对。",
  ],
  "after-W-cache-fill": [
    "This is the invariant the rest of the section leans on: after token t the cache holds exactly t pairs; token t + 1 appends one more, and the pairs already there are neither recomputed nor rewritten.",
    "这一整节都靠着这条不变式：处理完第 t 个词元之后，缓存里恰好有 t 对；第 t + 1 个词元只会再追加一对，已经在那儿的既不会重算，也不会改写。",
  ],
  "W-cache-fill.row": ["block {block} {kind}", "第 {block} 块 {kind}"],
  "W-cache-fill.axis": ["position", "位置"],
  "W-cache-fill.drawn": ["blocks 1–{drawn} of {layers} drawn", "画出 {layers} 个块中的第 1–{drawn} 块"],
  "W-cache-fill.aria": [
    ({ fresh }) => `{pairs} K slots and {pairs} V slots filled in each of {layers} blocks ({drawn} drawn); the last ${plural(fresh, "one", "{fresh}")} written at this step`,
    "{layers} 个块中每块填了 {pairs} 个 K 槽位和 {pairs} 个 V 槽位（画出 {drawn} 块）；最后 {fresh} 个是这一步写入的",
  ],
  "W-cache-fill.readout": [
    ({ k, pairs, t }) => `After step {at} the model has read ${plural(t, "{t} token", "{t} tokens")} (the prompt's {p}${k === 0 ? "" : k === 1 ? ", then 1 chosen" : ", then {k} chosen"}), and each of its {layers} blocks holds exactly ${plural(pairs, "{pairs} (K, V) pair", "{pairs} (K, V) pairs")}: {bytes} in all, {per} per token, in {dtype} as the engine stores them.`,
    ({ k }) => `第 {at} 步之后，模型共读过 {t} 个词元（提示词 {p} 个${k === 0 ? "" : "，加上选出的 {k} 个"}），{layers} 个块中的每一块都恰好存着 {pairs} 对 (K, V)：按引擎存储的 {dtype} 计，共 {bytes}，每个词元 {per}。`,
  ],
  "W-cache-fill.broken": [
    ({ t, pairs }) => `After step {at} the model has read ${plural(t, "{t} token", "{t} tokens")}, but each block holds ${plural(pairs, "{pairs} (K, V) pair", "{pairs} (K, V) pairs")}: the invariant does not hold.`,
    "第 {at} 步之后，模型共读过 {t} 个词元，每个块却存着 {pairs} 对 (K, V)：不变式被打破了。",
  ],
  "W-cache-fill.pending": [
    "The token just chosen, {piece}, is not in the cache yet: its pair is written when step {next} reads it.",
    "刚选出的 {piece} 还不在缓存里：第 {next} 步读它时，才会写入它的那一对。",
  ],
  "W-cache-fill.pending-last": [
    "The token just chosen, {piece}, is not in the cache: its pair would be written by the next step, which is not run here.",
    "刚选出的 {piece} 不在缓存里：要等下一步读它时才会写入，而这里不再往下走。",
  ],
  "W-cache-fill.told": [
    "Over the {steps} steps the cache grew from {first} to {last} pairs per block: the prompt's {p} at once, then exactly one per step. At every step, in all {layers} blocks, it held as many pairs as the tokens read, no more and no fewer.",
    "这 {steps} 步里，缓存从每块 {first} 对长到 {last} 对：提示词的 {p} 对一次写入，之后每步恰好一对。每一步、全部 {layers} 个块里，它存的对数都和读过的词元数一样，不多也不少。",
  ],
  "W-cache-fill.reference": [
    "The PyTorch reference blocks that ran this loop keep their pairs in {ref}; the bytes above are the engine's, which keeps them in {dtype}, as every count of the cache's bytes on this page is.",
    "跑这个循环的 PyTorch 参考实现把键值对存成 {ref}；上面的字节数按引擎算，引擎存成 {dtype}，本页所有关于缓存字节数的数字都这样算。",
  ],
  "W-cache-fill.told-broken": [
    ({ t, pairs }) => `At step {at} the cache held ${plural(pairs, "{pairs} pair", "{pairs} pairs")} per block after ${plural(t, "{t} token", "{t} tokens")}: the invariant did not hold.`,
    "第 {at} 步时，读过 {t} 个词元，缓存每块却有 {pairs} 对：不变式没有成立。",
  ],

  // W-cache-memory
  "title-W-cache-memory": ["What one sequence's cache weighs", "一条序列的缓存有多重"],
  "before-W-cache-memory": [
    "Now take the same bookkeeping to GPT-3's published shape: 96 blocks, d_model 12,288, every number stored in 16 bits. Drag the context length, or jump to 512 or 2,048 tokens.",
    "把同样的账放大到 GPT-3 公布的形状：96 块，d_model 12,288，每个数用 16 位存储。拖动上下文长度，或者直接跳到 512 或 2,048 个词元。",
  ],
  "after-W-cache-memory": [
    "Nothing here depends on the weights: only on the model's shape and on how many tokens are kept.",
    "这里的一切都与权重无关：只取决于模型的形状，以及保留了多少个词元。",
  ],
  "W-cache-memory.preset-512": ["512 tokens", "512 个词元"],
  "W-cache-memory.preset-2048": ["2,048 tokens", "2,048 个词元"],
  "W-cache-memory.series": ["GPT-3, fp16, one sequence", "GPT-3，fp16，一条序列"],
  "W-cache-memory.axis": ["KV cache (GiB)", "KV 缓存（GiB）"],
  "W-cache-memory.readout": [
    "{n} tokens: 2 (K and V) × {layers} blocks × {d} numbers × {n} tokens × {b} bytes = {gib}",
    "{n} 个词元：2（K 和 V）× {layers} 块 × {d} 个数 × {n} 个词元 × {b} 字节 = {gib}",
  ],
  "W-cache-memory.told": [
    "At GPT-3's own context of {full_n} tokens, one sequence's cache comes to {full} in fp16, before a single weight is loaded. Go back to {q_n} tokens and it is {quarter}, exactly a quarter: the formula is linear. Two vectors per block, a key and a value of {d} numbers each, 2 bytes a number, times the tokens in the window.",
    "GPT-3 自己的上下文是 {full_n} 个词元；用满时，一条序列的缓存在 fp16 精度下就有 {full}，这还没算上任何权重。退回到 {q_n} 个词元，是 {quarter}，正好四分之一：公式是线性的。每块两个向量，一个键、一个值，各 {d} 个数，每个数 2 字节，再乘以窗口里的词元数。",
  ],
  "W-cache-memory.told-ratio": [
    "At {full_n} tokens one sequence's cache comes to {full}; at {q_n} tokens it is {quarter}, {share} of it.",
    "{full_n} 个词元时，一条序列的缓存是 {full}；{q_n} 个词元时是 {quarter}，占 {share}。",
  ],

  // W-cache-here
  "title-W-cache-here": ["The cache of the model on this page", "本页模型的缓存"],
  "W-cache-here.runs-on": [
    "Computed from {model}'s configuration and the type its engine stores the pairs in; GPT-3 beside it is the formula on its shape.",
    "由 {model} 的配置和引擎存放键值对所用的类型算出；旁边的 GPT-3 是按它的配置套公式。",
  ],
  "before-W-cache-here": [
    "The same formula for the model that runs on this page: per token, 2 × blocks × KV heads × numbers per head × bytes per number.",
    "对本页运行的模型套同一个公式：每个词元 2 × 块数 × KV 头数 × 每个头的数 × 每个数的字节数。",
  ],
  "after-W-cache-here": [
    "Bytes per token are set by the shape alone: fewer blocks, KV heads shared between query heads, or a 16-bit cache each make them smaller.",
    "每个词元的字节数只由形状决定：块少一些、几个查询头共用 KV 头，或者用 16 位存缓存，都能让它变小。",
  ],
  "W-cache-here.gpt3": ["GPT-3 (fp16)", "GPT-3（fp16）"],
  "W-cache-here.per-token": ["KV cache per token", "每个词元的 KV 缓存"],
  "W-cache-here.full": ["one sequence, its whole context", "一条序列，上下文用满"],
  "W-cache-here.at": ["{name}, {n} tokens", "{name}，{n} 个词元"],
  "W-cache-here.bytes-axis": ["bytes", "字节"],
  "W-cache-here.gib-axis": ["GiB", "GiB"],
  "W-cache-here.readout": [
    ({ kv }) => `{model}: 2 × {layers} blocks × ${kv === 1 ? "{kv} KV head" : "{kv} KV heads"} × {hd} numbers × {b} bytes ({dtype}) = {per} bytes ({size}) per token, against GPT-3's {gpt} bytes ({gsize}): GPT-3 needs {ratio}× as much.`,
    "{model}：2 × {layers} 块 × {kv} 个 KV 头 × {hd} 个数 × {b} 字节（{dtype}）= 每个词元 {per} 字节（{size}），GPT-3 是 {gpt} 字节（{gsize}），是它的 {ratio} 倍。",
  ],
  "W-cache-here.full-context": [
    "At its full context of {ctx} tokens one sequence's cache is {full}, against GPT-3's {gfull} at {gctx}.",
    "上下文用满 {ctx} 个词元时，一条序列的缓存是 {full}；GPT-3 用满 {gctx} 个词元是 {gfull}。",
  ],
  "W-cache-here.pool": ["The engine's paged pool sets aside exactly {pool} bytes per token for it.",
    "引擎的分页缓存池为它每个词元预留的，正好也是 {pool} 字节。"],
  "W-cache-here.pool-differs": ["The engine's paged pool sets aside {pool} bytes per token for it, not {per}.",
    "引擎的分页缓存池为它每个词元预留的是 {pool} 字节，而不是 {per} 字节。"],
  "W-cache-here.grouped": [
    ({ kv }) => `Its {heads} query heads share ${kv === 1 ? "one KV head" : "{kv} KV heads"} (grouped-query attention): that alone makes its cache {g}× smaller than if every query head kept its own keys and values.`,
    "它的 {heads} 个查询头共用 {kv} 个 KV 头（分组查询注意力）：要是每个查询头各存一份键和值，缓存会是现在的 {g} 倍。",
  ],
  "W-cache-here.sliding": [
    ({ n }) => `${n === 1 ? "One" : "{n}"} of its {layers} blocks attend${n === 1 ? "s" : ""} only to the last {w} tokens; the engine's pool still keeps those blocks' pairs for every token, so the figures above are what it holds.`,
    "它的 {layers} 个块里有 {n} 个只关注最近的 {w} 个词元；不过引擎的缓存池仍为这些块保存每个词元的键值对，所以上面的数字就是缓存池实际占用的。",
  ],
  "W-cache-here.every-head": ["Each of its {heads} heads keeps its own keys and values, as GPT-3's do.",
    "它的 {heads} 个头各自保存自己的键和值，和 GPT-3 一样。"],

  // W-ring-overflow
  "title-W-ring-overflow": ["A ring buffer that wraps without a word", "一声不吭就回绕的环形缓冲区"],
  "before-W-ring-overflow": [
    "A cache is usually a buffer of fixed size, not a list that grows forever. Here a deliberately naive ring buffer runs beside a guarded cache of the same capacity: when the ring runs out of slots it starts again at slot 0; the guarded cache refuses and raises an error instead. Both run ten greedy steps on the prompt below, beside a cache with room for every pair. Set the capacity and the prompt and run them. The slots show which position's pair each one holds at the end.",
    "缓存通常是一块固定大小的缓冲区，而不是一个可以无限变长的列表。这里让一个故意写得很朴素的环形缓冲区，和同样容量的受保护缓存并排运行：环形缓冲区槽位用完后从槽位 0 重新开始；受保护的缓存则拒绝写入、直接报错。两者都在下面的提示词上走十步贪心生成，旁边还有一个装得下所有键值对的缓存作对照。设好容量和提示词，然后运行。槽位图显示结束时每个槽位里存的是哪个位置的键值对。",
  ],
  "after-W-ring-overflow": [
    "An error you can see beats a wrong answer you cannot: the ring's text drifts without a word, the guarded cache stops and says why.",
    "看得见的错误，总好过看不见的错答案：环形缓冲区的文字悄悄跑偏，受保护的缓存则停下来并说明原因。",
  ],
  "W-ring-overflow.prompt": ["Prompt", "提示词"],
  "W-ring-overflow.capacity": ["Capacity (slots)", "容量（槽位数）"],
  "W-ring-overflow.run": ["Run all three", "三个都运行"],
  "W-ring-overflow.preset-8": ["8 slots", "8 个槽位"],
  "W-ring-overflow.preset-16": ["16 slots", "16 个槽位"],
  "W-ring-overflow.slots-empty": ["the ring's slots, drawn after a run", "环形缓冲区的槽位，运行后画出"],
  "W-ring-overflow.aria.correct": ["the guarded cache, and a cache with room", "受保护的缓存，以及装得下的缓存"],
  "W-ring-overflow.aria.ring": ["naive ring buffer", "朴素环形缓冲区"],
  "W-ring-overflow.roomy": ["with room for every pair:", "装得下所有键值对的缓存："],
  "W-ring-overflow.guarded": ["guarded cache of {capacity} slots:", "容量 {capacity} 的受保护缓存："],
  "W-ring-overflow.ring": ["naive ring of {capacity} slots:", "容量 {capacity} 的朴素环形缓冲区："],
  "W-ring-overflow.room": [
    ({ written }) => `It had room for ${plural(written, "the {written} pair", "all {written} pairs")}: no error, the same text as a larger cache's.`,
    "它装得下全部 {written} 对：没有报错，文字和更大的缓存一样。",
  ],
  "W-ring-overflow.guard": [
    "Its text stops there: asked to write position {position} ({piece}), the guarded cache refused and raised an error, in the engine's words: {message}",
    "它的文字到此为止：要写入位置 {position}（{piece}）时，受保护的缓存拒绝写入并报错。引擎的原话是：{message}（意思是：序列 {seq} 将要存 {need} 个词元，但缓存只有 {room} 个位置，也就是上下文长度；缓存绝不会被悄悄覆盖）",
  ],
  "W-ring-overflow.slots": [
    ({ written, prompt }) => `{capacity} slots after ${plural(written, "{written} write", "{written} writes")} (the prompt's {prompt}, then one per step)`,
    "{capacity} 个槽位，共写入 {written} 次（先是提示词的 {prompt} 个，之后每步一个）",
  ],
  "W-ring-overflow.slot-axis": ["slot", "槽位"],
  "W-ring-overflow.slots-aria": ["slots 0 to {last} hold positions {slots}; positions overwritten: {over}",
    "槽位 0 到 {last} 依次存放位置 {slots}；被覆盖的位置：{over}"],
  "W-ring-overflow.none": ["none", "无"],
  "W-ring-overflow.fits": [
    "No overflow: all {written} pairs fit in the {capacity} slots, so the ring overwrote nothing and the guarded cache raised nothing. Lower the capacity below {written} to see the ring wrap.",
    "没有溢出：{written} 对全部装进了 {capacity} 个槽位，所以环形缓冲区什么也没覆盖，受保护的缓存也没有报错。把容量调到 {written} 以下，就能看到环形缓冲区回绕。",
  ],
  "W-ring-overflow.wrapped": [
    ({ count }) => `The ring overwrote slot {slot}: position {position} ({piece}) went into the slot that still held position {lost} ({lost_piece}), and nothing was raised${count === 1 ? "" : "; in all it lost the pairs of positions {all}"}.`,
    ({ count }) => `环形缓冲区覆盖了槽位 {slot}：位置 {position}（{piece}）写进了仍存着位置 {lost}（{lost_piece}）的槽位，没有任何报错${count === 1 ? "" : "；它一共丢掉了位置 {all} 的键值对"}。`,
  ],
  "W-ring-overflow.refused": ["The guarded cache refused at position {position} instead.",
    "受保护的缓存则在位置 {position} 拒绝写入。"],
  "W-ring-overflow.not-refused": ["The guarded cache did not refuse, which it should have.",
    "受保护的缓存没有拒绝写入——它本该拒绝。"],
  "W-ring-overflow.parts": ["The ring's text parts from the roomy cache's at generated token {k}.",
    "环形缓冲区的文字从第 {k} 个生成的词元起与装得下的缓存不同。"],
  "W-ring-overflow.same-text": [
    "Over these {steps} steps the ring's text happens to be the same, but from the wrap on its attention read pairs that were no longer the ones it wrote.",
    "这 {steps} 步里环形缓冲区的文字碰巧还一样，但从回绕那一刻起，它的注意力读到的已经不是当初写下的那些键值对了。",
  ],

  // W-position-bug
  "title-W-position-bug": ["Every new token at position 0", "每个新词元都在位置 0"],
  "before-W-position-bug": [
    "Every cached key has to carry its own position. This runs a bug real implementations have shipped: each new token is written at position 0 instead of at the cache's current length. It runs on your prompt, twelve greedy steps, beside the correct engine; press the button, and the first token where the two texts part is outlined.",
    "每个缓存下来的键都得带着自己的位置。这里运行一个真实实现里出现过的错误：每个新词元都写在位置 0，而不是缓存当前的长度。它在你的提示词上走十二步贪心生成，与正确的引擎并排比较；按下按钮，两段文字第一次分开的那个词元会被框出来。",
  ],
  "after-W-position-bug": [
    "The model now scores every new token as if it were the first, so what positional encoding has promised since section 1 no longer holds, and the output degrades without a single exception. Both cache bugs are silent, which is why this engine checks positions and capacity itself and raises.",
    "模型现在把每个新词元都当成第一个来打分，位置编码从第 1 节起许下的承诺不再成立，输出悄悄变差，连一个异常都没有。两个缓存错误都悄无声息，所以这个引擎自己检查位置和容量，一旦出错就报错。",
  ],
  "W-position-bug.run": ["Run with the bug, beside the correct engine", "带着这个错误运行，与正确的引擎并排比较"],
  "W-position-bug.aria.correct": ["correct positions", "正确的位置"],
  "W-position-bug.aria.buggy": ["positions stuck at 0", "卡在 0 的位置"],
  "W-position-bug.correct": ["correct engine, positions {list}:", "正确的引擎，位置 {list}："],
  "W-position-bug.positions": ["with the bug, positions {list}:", "带着错误，位置 {list}："],
  "W-position-bug.same": [
    "Over these {n} tokens the bug did not change the text this time, and nothing was raised. Another prompt shows it.",
    "这一次，在这 {n} 个词元里错误没有改变文字，也没有报任何错。换个提示词就能看到它。",
  ],
  "W-position-bug.diverge": [
    "With the bug the text parts from the correct one at generated token {k}: {bug} instead of {right}. No exception, no crash.",
    "带着这个错误，文字从第 {k} 个生成的词元起和正确的分开：是 {bug} 而不是 {right}。没有异常，没有崩溃。",
  ],
  "W-position-bug.worse": [
    "The correct model finds the buggy text less likely: perplexity {pb} against {pc} for its own (1 would be certain; higher is more surprising).",
    "在正确的模型看来，这段错误的文字更不可信：困惑度 {pb}，而它自己的文字只有 {pc}（1 表示完全确定，越高越出乎意料）。",
  ],
  "W-position-bug.not-worse": [
    "Yet the correct model does not find the buggy text less likely here: perplexity {pb} against {pc} for its own.",
    "不过这里正确的模型并不觉得错误的文字更不可信：困惑度 {pb}，它自己的文字是 {pc}。",
  ],
};
