// §08 Open the loop again. Every word of the section, [English, Chinese].

// the count of ideas as a word, as each language writes it
const EN = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
const ZH = [..."零一二三四五六七八九十"].concat(["十一", "十二"]);

export default {
  "title-s08": ["9. Open the loop again", "9. 再次打开循环"],
  "intro-s08": [
    "What the page showed, each idea with the number it computed for it; where each number came from; and where to read next.",
    "本页讲过的几件事，每件配上本页为它算出的数字；这些数字从哪里来；以及接下来读什么。",
  ],
  "title-W-reopen": [({ n }) => `The whole pass, in ${EN[n] ?? n} ideas`, ({ n }) => `整个前向传播，${ZH[n] ?? n}个要点`],
  "W-reopen.runs-on": ["Computed on {model} from the prompt at the top, by the same requests as the widgets it names.",
    "用页面顶部的提示词，在 {model} 上计算，所用的请求和它提到的组件相同。"],
  "before-W-reopen": [
    ({ n }) => `${EN[n] ?? n} ideas, one per section, each with a number this page computed; the headings jump back to them.`
      .replace(/^./, (c) => c.toUpperCase()),
    ({ n }) => `${ZH[n] ?? n}个要点，每节一个，各配一个本页算出的数字；点标题可以跳回那一节。`,
  ],
  "after-W-reopen": [
    "Further reading: Vaswani et al., <cite>Attention Is All You Need</cite> (2017); Radford et al., <cite>Language Models are Unsupervised Multitask Learners</cite> (GPT-2, 2019); Holtzman et al., <cite>The Curious Case of Neural Text Degeneration</cite> (top-p, 2019); Kwon et al., <cite>Efficient Memory Management for Large Language Model Serving with PagedAttention</cite> (<cite>vLLM</cite>, 2023); Williams et al., <cite>Roofline: An Insightful Visual Performance Model for Multicore Architectures</cite> (2009); Karpathy's <cite>nanoGPT</cite>; <cite>llama.cpp</cite>.",
    "延伸阅读：<cite>Vaswani et al., Attention Is All You Need</cite>（2017）；<cite>Radford et al., Language Models are Unsupervised Multitask Learners</cite>（GPT-2，2019）；<cite>Holtzman et al., The Curious Case of Neural Text Degeneration</cite>（top-p，2019）；<cite>Kwon et al., Efficient Memory Management for Large Language Model Serving with PagedAttention</cite>（<cite>vLLM</cite>，2023）；<cite>Williams et al., Roofline: An Insightful Visual Performance Model for Multicore Architectures</cite>（Roofline 模型，2009）；<cite>Karpathy, nanoGPT</cite>；<cite>llama.cpp</cite>。",
  ],
  "reopen-button": ["Back to the top: try another prompt", "回到顶部，换个提示词再试"],

  // the ideas, one per section, each with the page's own number
  "W-reopen.idea.s00": [
    ({ n }) => `Text becomes token ids, and each id picks one row of a table: on {model} your prompt is ${n === 1 ? "{n} token" : "{n} tokens"}, each a row of {d} numbers out of {vocab}.`,
    "文字变成词元编号，每个编号取出表里的一行：在 {model} 上，你的提示词是 {n} 个词元，每个对应词表 {vocab} 行中的一行、{d} 个数。",
  ],
  "W-reopen.idea.s01": [
    "Each block reads the residual stream and adds attention's and the FFN's work back into it; most of a block's weights are the FFN's: {gpt2} at GPT-2 small's width, {here} in {model}.",
    "每个块读取残差流，再把注意力和 FFN 的结果加回去；块里的权重大多属于 FFN：GPT-2 small 的宽度下占 {gpt2}，{model} 里占 {here}。",
  ],
  "W-reopen.idea.s03": [
    "The last vector becomes a score for each of the {vocab} vocabulary entries, and a sampler chooses: at T = 1 softmax gives the toy's {word} {mat}; after your prompt the model's favourite next token is {piece}, at {p}.",
    "最后一个向量变成词表里 {vocab} 个词元各自的分数，再由采样器选择：T = 1 时，softmax 给玩具例子里的 {word} {mat}；在你的提示词之后，模型最看好的下一个词元是 {piece}，{p}。",
  ],
  "W-reopen.idea.s04": [
    "Generating is that pass in a loop. Keeping the keys and values, {steps} greedy steps on your prompt send {cached} tokens through the model instead of {naive}: {ratio}.",
    "生成就是把这次前向传播放进循环。保留键和值，在你的提示词上走 {steps} 步贪心生成，只需把 {cached} 个词元送进模型，而不是 {naive} 个：{ratio}。",
  ],
  "W-reopen.idea.s05": [
    "The KV cache keeps one key and one value per token in every block, and must stay exactly that: {per} per token for {model}, {gpt3} for one GPT-3 sequence of {ctx} tokens.",
    "KV 缓存在每个块里为每个词元存一个键和一个值，而且必须恰好如此：{model} 每个词元 {per}，GPT-3 一条 {ctx} 词元的序列要 {gpt3}。",
  ],
  "W-reopen.idea.s06": [
    ({ all }) => `Each step reads every weight once: with fp16 weights decode does {v} FLOPs per byte, ${all ? "below the ridge of every machine the Roofline shows, so memory-bound on each" : "below the GPUs' ridges, so memory-bound there"}, and past {n} sequences GPT-3's caches outweigh its weights.`,
    ({ all }) => `每一步都要把全部权重读一遍：权重是 fp16 时，解码每字节只做 {v} 次运算，${all ? "低于 Roofline 图上每台机器的分界点，所以在它们上面都是内存受限的" : "低于两款 GPU 的分界点，所以在它们上面是内存受限的"}；超过 {n} 条序列，GPT-3 的缓存就比它的权重还重。`,
  ],
  "W-reopen.idea.drafting": [
    ({ same }) => `Beyond the loop, the engine drafts tokens by copying from the text and checks a whole draft in one pass: on your prompt its {n} tokens took {passes} reads of the weights instead of {plain}, ${same ? "word for word the same text" : "though the two texts differ"}.`,
    ({ same }) => `循环之外，引擎从文本里抄出草稿，一遍就检查整份草稿：在你的提示词上，同样 {n} 个词元只读了 {passes} 遍权重，而不是 {plain} 遍，${same ? "文字一字不差" : "不过两次的文字有出入"}。`,
  ],
  "W-reopen.idea.drafting.none": [
    "Beyond the loop, an engine can draft tokens by copying from the text and check a whole draft in one pass; {model}'s runner here drafts nothing, so its {n} tokens took {plain} reads of the weights either way.",
    "循环之外，引擎可以从文本里抄出草稿，一遍就检查整份草稿；这里运行 {model} 的程序不打草稿，所以 {n} 个词元两种方式都要读 {plain} 遍权重。",
  ],
  "W-reopen.idea.s07": [
    "{lines} lines of code run all of it; on the server running this page no call of {model} can take less than {read}, one read of its {weights} of weights.",
    "{lines} 行代码就能跑起这一切；在运行本页的服务器上，{model} 的每次调用都不可能少于 {read}，也就是把它 {weights} 的权重读一遍的时间。",
  ],

  "W-reopen.sources-title": ["Where the numbers came from", "数字从哪里来"],
  "W-reopen.source.model": [
    ({ n }) => (n === 1 ? "This widget runs or reads {model}, the model at the top: " : "These {n} widgets run or read {model}, the model at the top, so their numbers change when it does, and most of them follow your prompt too: "),
    "这 {n} 个组件运行或读取页面顶部的模型 {model}，所以换了模型，它们的数字就会变，其中大多数还会跟着你的提示词变：",
  ],
  "W-reopen.source.formula": [
    ({ n }) => (n === 1 ? "This widget computes a formula on a fixed configuration or fixed numbers (GPT-2 small's shape, GPT-3's, the five-word toy), whatever model is loaded: " : "These {n} widgets compute formulas on fixed configurations or fixed numbers (GPT-2 small's shape, GPT-3's, the five-word toy), whatever model is loaded: "),
    "这 {n} 个组件按固定的配置或固定的数字（GPT-2 small 的形状、GPT-3 的形状、五个词的玩具例子）计算公式，和加载的是哪个模型无关：",
  ],
  "W-reopen.source.picture": [
    ({ n }) => (n === 1 ? "This one is a picture of an idea, with nothing computed: " : "These {n} are pictures of an idea, with nothing computed: "),
    "这 {n} 个是示意图，不做任何计算：",
  ],
  "W-reopen.measured": [
    "Wherever a widget shows a time, a rate or a bandwidth, it was measured on the server running this page when that widget ran, and changes from run to run.",
    "凡是组件显示的时间、速度或带宽，都是那个组件运行时在运行本页的服务器上测得的，每次运行都会有所不同。",
  ],
  "W-reopen.readout": [
    ({ picture }) => `{sections} sections and {widgets} widgets: {model} from the model at the top, {formula} from formulas on fixed shapes${picture === 1 ? ", 1 picture" : picture ? ", {picture} pictures" : ""}, and this recap`,
    ({ picture }) => `共 {sections} 节、{widgets} 个组件：{model} 个来自页面顶部的模型，{formula} 个来自固定形状上的公式${picture ? "，{picture} 个是示意图" : ""}，外加这份回顾`,
  ],
  "W-reopen.back": ["back at the top: change the prompt, and every widget that follows it follows again",
    "回到了顶部：改一下提示词，跟随它的组件都会重新计算"],
};
