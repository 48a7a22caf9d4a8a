// §08 Open the loop again. Every word of the section, [English, Chinese].

export default {
  "title-s08": ["8. Open the loop again", "8. 再次打开循环"],
  "intro-s08": [
    "What to keep, where each number on this page came from, and where to read next.",
    "值得记住的东西、本页每个数字的来历，以及接下来读什么。",
  ],
  "title-W-reopen": ["The whole pass, and where its numbers came from", "整个前向传播，以及数字的来历"],
  "W-reopen.runs-on": ["The page itself: its sections, and what each widget says it runs on.", "本页自身：它的各节，以及每个组件自己说明的计算依据。"],
  "before-W-reopen": [
    "Text becomes ids, ids become rows of a table, blocks add their work into one stream, the last vector becomes scores, a sampler chooses, and the loop runs again with a cache that must stay honest and that, across many users, is what the memory is spent on. Jump back to any part:",
    "文字变成编号，编号变成表里的行，各个块把计算结果加进同一条残差流，最后一个向量变成分数，采样器做出选择，循环带着缓存再跑一遍；这份缓存必须保持正确，而在许多用户同时使用时，内存主要就花在它身上。跳回任意一部分：",
  ],
  "after-W-reopen": [
    "Further reading: Vaswani et al., <cite>Attention Is All You Need</cite> (2017); Radford et al., <cite>Language Models are Unsupervised Multitask Learners</cite> (GPT-2, 2019); Holtzman et al., <cite>The Curious Case of Neural Text Degeneration</cite> (top-p, 2019); Kwon et al., <cite>Efficient Memory Management for Large Language Model Serving with PagedAttention</cite> (<cite>vLLM</cite>, 2023); Williams et al., <cite>Roofline: An Insightful Visual Performance Model for Multicore Architectures</cite> (2009); Karpathy's <cite>nanoGPT</cite>; <cite>llama.cpp</cite>.",
    "延伸阅读：<cite>Vaswani et al., Attention Is All You Need</cite>（2017）；<cite>Radford et al., Language Models are Unsupervised Multitask Learners</cite>（GPT-2，2019）；<cite>Holtzman et al., The Curious Case of Neural Text Degeneration</cite>（top-p，2019）；<cite>Kwon et al., Efficient Memory Management for Large Language Model Serving with PagedAttention</cite>（<cite>vLLM</cite>，2023）；<cite>Williams et al., Roofline: An Insightful Visual Performance Model for Multicore Architectures</cite>（屋顶线模型，2009）；<cite>Karpathy, nanoGPT</cite>；<cite>llama.cpp</cite>。",
  ],
  "reopen-button": ["Open the loop again", "再次打开循环"],
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
    "Wherever a widget shows a time, a rate or a bandwidth, it was measured on this machine when that widget ran, and changes from run to run.",
    "凡是组件显示的时间、速度或带宽，都是那个组件运行时在这台机器上测得的，每次运行都会有所不同。",
  ],
  "W-reopen.readout": [
    ({ picture }) => `{sections} sections and {widgets} widgets: {model} from the model at the top, {formula} from formulas on fixed shapes${picture ? ", {picture} pictures" : ""}`,
    ({ picture }) => `共 {sections} 节、{widgets} 个组件：{model} 个来自页面顶部的模型，{formula} 个来自固定形状上的公式${picture ? "，{picture} 个是示意图" : ""}`,
  ],
  "W-reopen.back": ["back at the start: change the prompt and follow it through again", "回到开头：改一下提示词，再从头跟一遍"],
};
