// §07 The runnable loop. Every word of the section, [English, Chinese].

import { plural } from "../lib/i18n.js";

export default {
  "title-s07": ["8. The runnable loop", "8. 可运行的循环"],
  "intro-s07": [
    "Everything above fits in a loop of nine lines. Start from the prompt's token ids, run the stack, turn the last position's scores into probabilities, choose one token, append it, run again; keep a cache so that each run only pays for the newest token; stop when the model says so or the budget runs out. It is the loop behind every widget on this page that generates tokens, and forwardpass's engine runs it for many sequences at once.",
    "上面的一切都装得进一个九行的循环。从提示词的词元编号开始，跑一遍整个模型，把最后一个位置的分数变成概率，选出一个词元，接到后面，再跑一遍；留着缓存，让每一遍只为最新的那个词元付钱；模型说停、或者预算用完，就停下。本页每一个生成词元的组件背后都是这个循环，forwardpass 的引擎则同时为许多条序列跑它。",
  ],
  "bridge-s07": [
    "That is the loop, and what it costs on the server running this page. The last section gathers what the page has shown, each idea with its number, and says where the numbers came from.",
    "这就是这个循环，以及它在运行本页的服务器上的代价。最后一节把整页收拢起来：每个要点配上本页算出的数字，并说明这些数字从哪里来。",
  ],
  "link.place": ["§{n} · {name}", "§{n} · {name}"],

  // W-loop-walk
  "title-W-loop-walk": ["Line by line", "逐行查看"],
  "W-loop-walk.runs-on": ["The loop's lines are fixed; the links go to the widgets on this page that put a number on each, and the stop tokens are {model}'s own.",
    "循环的代码是固定的；链接指向本页给每一行标上数字的组件，结束词元是 {model} 自己的。"],
  "before-W-loop-walk": [
    "Step through the loop with ◀ and ▶. The current line lights up, and the readout links to the widgets that put a number on it, numbered as the headings are.",
    "用 ◀ 和 ▶ 逐行走过这个循环。当前行会亮起，读数里有链接，指向给这一行标上数字的组件，编号和各节标题一致。",
  ],
  "after-W-loop-walk": [
    "Nothing in the loop is new: every line is one of the stages or choices this page has already taken apart.",
    "循环里没有新东西：每一行都是本页已经拆开讲过的某个阶段或选择。",
  ],
  "W-loop-walk.prev": ["previous line", "上一行"],
  "W-loop-walk.next": ["next line", "下一行"],
  "W-loop-walk.readout": ["line {at} of {lines}: {line} — its numbers: ", "第 {at} 行（共 {lines} 行）：{line}——它的数字见："],
  "W-loop-walk.stop-title": ["When the loop stops", "循环什么时候停"],
  "W-loop-walk.stop": [
    ({ count }) => `The loop has two exits. The last line is one: the model chooses its end token, and the loop breaks without appending it; on {model} ${count === 1 ? "that token is {tokens}" : "those are {tokens}"}. The {while} line is the other: the sequence reaches {max_len}. A server adds exits of its own: a cap on new tokens ({max_tokens}), stop strings, the end of the context window, a time limit, a client that hangs up. forwardpass's engine checks all of them in one place, right after each token is chosen, and the moment a sequence stops, its KV blocks go back to the pool; {link} shows them freed.`,
    "这个循环有两个出口。最后一行是其中之一：模型选出了它的结束词元，循环不把它接上、直接跳出；在 {model} 上，结束词元是 {tokens}。{while} 那一行是另一个：序列长到了 {max_len}。推理服务还会加上自己的出口：新词元数的上限（{max_tokens}）、停止字符串、上下文窗口的尽头、时间限制、客户端断开。forwardpass 的引擎在同一个地方检查所有这些条件，就在每个词元选出之后；序列一停，它的 KV 缓存页就立刻还回池子，{link} 里能看到它们被释放。",
  ],

  // W-loop-cost
  "title-W-loop-cost": ["What the loop costs here", "这个循环在这里的代价"],
  "before-W-loop-cost": [
    "The same lines, priced for your prompt on the model at the top. Drag the number of generated tokens. The last column is the least time the server running this page can take for each call of the model: its FLOPs at the measured matrix rate, or one read of all the weights at the measured bandwidth, whichever is longer; that one is what bounds the call.",
    "同样这几行，针对你的提示词、在页面顶部的模型上标价。拖动生成的词元数。最后一列是运行本页的服务器完成每次模型调用最少要用的时间：按实测的矩阵乘法速度算完它的运算量，或按实测带宽把全部权重读一遍，取较长的那个；较长的那个就是限制这次调用的因素。",
  ],
  "after-W-loop-cost": [
    "The first call pays for the whole prompt; every later call pays for one token, one full read of the weights, and a cache that keeps growing.",
    "第一次调用为整个提示词付钱；之后每次调用为一个词元、一遍完整的权重读取和一份不断变大的缓存付钱。",
  ],
  "W-loop-cost.new": ["Generated tokens", "生成的词元数"],
  "W-loop-cost.caption": ["Cost per line", "每一行的代价"],
  "W-loop-cost.col.line": ["line", "代码行"],
  "W-loop-cost.col.what": ["what", "内容"],
  "W-loop-cost.col.cost": ["cost", "代价"],
  "W-loop-cost.col.floor": ["least time here", "这里最少用时"],
  "W-loop-cost.what.prefill": ["first call: the whole prompt (prefill)", "第一次调用：整个提示词（预填充）"],
  "W-loop-cost.what.first_decode": ["second call: one token", "第二次调用：一个词元"],
  "W-loop-cost.what.last_decode": ["last call: one token, the longest cache", "最后一次调用：一个词元，缓存最长"],
  "W-loop-cost.what.all_decode": ["every call after the first", "第一次之后的全部调用"],
  "W-loop-cost.what.cache": [
    ({ pairs }) => `the KV cache this line grows, at the loop's end: ${plural(pairs, "{pairs} pair", "{pairs} pairs")} per block ({dtype})`,
    "这一行不断写入的 KV 缓存，循环结束时：每块 {pairs} 对（{dtype}）"],
  "W-loop-cost.what.softmax": ["softmax over the vocabulary, per call", "每次调用对整个词表做 softmax"],
  "W-loop-cost.what.ratio": ["the work this line saves: naive ÷ cached", "这一行省下的工作量：朴素 ÷ 缓存"],
  "W-loop-cost.flops": ["{n} FLOPs", "{n} FLOPs"],
  "W-loop-cost.flops-calls": [({ calls }) => plural(calls, "{n} FLOPs in {calls} call", "{n} FLOPs in {calls} calls"),
    "{calls} 次调用共 {n} FLOPs"],
  "W-loop-cost.floor": ["≥ {time} ({bound})", "≥ {time}（{bound}）"],
  "W-loop-cost.none": ["—", "—"],
  "W-loop-cost.readout": [
    ({ p, n }) => `prompt of ${plural(p, "{p} token", "{p} tokens")}, {n} generated: prefill {prefill} FLOPs${n === 1 ? ", the one call, which chooses it" : ", then {each} for the first token after it"}`,
    ({ n }) => `提示词 {p} 个词元，生成 {n} 个：预填充 {prefill} FLOPs${n === 1 ? "，这唯一的一次调用就选出了它" : "，之后第一个词元 {each}"}`,
  ],
  "W-loop-cost.told": [
    ({ n }) => `${n === 1 ? "That first call already chooses the one token asked for." : n === 2 ? "The second call runs one token: {last} FLOPs." : "Each later call runs one token, its FLOPs growing to {last} by the last as attention reads a longer cache."} Every call also reads all {weights} of {model}'s weights, and at the server's {bw} that read alone takes {read}: no call can be faster than that, whatever its FLOPs.`,
    ({ n }) => `${n === 1 ? "第一次调用就已经选出了要的那一个词元。" : n === 2 ? "第二次调用只送一个词元：{last} FLOPs。" : "之后每次调用只送一个词元；不过注意力要读的缓存越来越长，所以运算量到最后一次涨到 {last} FLOPs。"}每次调用还要把 {model} 全部 {weights} 的权重读一遍，按这台服务器 {bw} 的带宽，光这一遍就要 {read}：不管运算量多小，没有哪次调用能比这更快。`,
  ],
  "W-loop-cost.told-bounds": [
    ({ n, calls }) => `So here the prefill is {pbound}${n === 1 ? "." : plural(calls, ", and the one-token call after it is {dbound}: it takes at least {total}.", ", and each one-token call after it is {dbound}: {calls} of them take at least {total} in all.")}`,
    ({ n }) => `所以在这里，预填充是{pbound}的${n === 1 ? "。" : n === 2 ? "，之后那一次单词元调用是{dbound}的：至少要 {total}。" : "，之后每次一个词元的调用是{dbound}的：{calls} 次加起来至少要 {total}。"}`,
  ],
  "W-loop-cost.told-assumed": [
    ({ n }) => `${n === 1 ? "That verdict rests" : "Both verdicts rest"} on what was read and measured here: {model}'s weights as loaded, {format}, {per} bytes a weight on average, so ${n === 1 ? "the prefill does" : "a one-token call does"} {i} FLOPs per byte of weights; and this server's ridge of {ridge} FLOPs per byte, its {dtype} matrix rate ({rate}) over its read bandwidth ({bw}).`,
    ({ n }) => `${n === 1 ? "这个结论" : "这两个结论"}依赖在这里读到和测到的东西：{model} 加载后的权重：{format}，平均每个权重 {per} 字节，所以${n === 1 ? "预填充" : "一次单词元调用"}每字节权重做 {i} 次运算；以及这台服务器每字节 {ridge} 次运算的分界点，也就是它的 {dtype} 矩阵乘法速度（{rate}）除以读内存带宽（{bw}）。`,
  ],
  "W-loop-cost.told-fp16": [
    "With fp16 weights, 2 bytes each as {link} counts GPT-3's, the same call would do {i} FLOPs per byte: {bound} here.",
    "如果权重是 fp16，也就是 {link} 给 GPT-3 算的每个 2 字节，同样一次调用每字节只做 {i} 次运算：在这里是{bound}的。",
  ],
  "W-loop-cost.stored": ["as the file stores them ({types})", "按文件原样存储（{types}）"],
  "W-loop-cost.intensity": ["the widget on work per byte", "“每字节权重换来的运算”那个组件"],
};
