/* Pay the hosted checkout from a browser wallet (served by the service itself; no library, no CDN).
 *
 * Wallets are discovered as EIP-6963 announces them, falling back to the legacy `window.ethereum`
 * (EIP-1193). On the payer's click the page connects (eth_requestAccounts), moves the wallet to the
 * payment's chain (EIP-3326 wallet_switchEthereumChain, or EIP-3085 wallet_addEthereumChain where the
 * service may name a public RPC), checks the balance, and asks for one transaction: an ERC-20
 * `transfer(deposit, remaining)` or the native value to the deposit address. Where the token takes
 * EIP-3009 (`pay.signature`), each wallet also offers to pay by signature: the wallet signs
 * (eth_signTypedData_v4) a `TransferWithAuthorization` of what is owed to the deposit address, the page
 * posts it, and the service submits it and pays the gas, so the payer needs no native coin. Nothing else
 * is ever asked of the wallet: no other signature, no approval. The QR code and the copy buttons stay as
 * the other way.
 *
 * The payment's facts and every sentence shown come from the page (`#wallet-data`, JSON written by the
 * server in the payer's language). The dashboard funds a merchant's refund with the same script
 * (`plainStatus`: its status URL answers `{remaining}`).
 */
(function () {
  "use strict";
  var dataElement = document.getElementById("wallet-data");
  var panel = document.getElementById("wallet");
  if (!dataElement || !panel || typeof BigInt === "undefined") return;
  var pay = JSON.parse(dataElement.textContent);
  var text = pay.messages;
  var list = document.getElementById("wallet-list");
  var said = document.getElementById("wallet-status");
  var sent = document.getElementById("wallet-tx");
  var wallets = [];
  var busy = false;
  var TX_KEY = "wallet-tx:" + pay.sessionId;

  function say(message, bad) {
    said.textContent = message;
    said.className = "small" + (bad ? " error" : "");
  }

  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (_, name) {
      return values[name] === undefined ? "" : String(values[name]);
    });
  }

  function hex(value) {
    return "0x" + BigInt(value).toString(16);
  }

  function word(value) {
    return BigInt(value).toString(16).padStart(64, "0");
  }

  function units(value) {
    // A base-unit amount as the token's decimal figure, for the balance message.
    var digits = BigInt(value).toString().padStart(pay.decimals + 1, "0");
    var whole = digits.slice(0, digits.length - pay.decimals);
    var fraction = digits.slice(digits.length - pay.decimals).replace(/0+$/, "");
    return fraction ? whole + "." + fraction : whole;
  }

  function showSent(hash) {
    sent.hidden = false;
    var target = document.getElementById("wallet-tx-hash");
    target.textContent = "";
    if (pay.explorerUrl) {
      var a = document.createElement("a");
      a.href = pay.explorerUrl.replace(/\/$/, "") + "/tx/" + hash;
      a.rel = "noopener noreferrer";
      a.textContent = hash;
      target.appendChild(a);
    } else {
      target.textContent = hash;
    }
  }

  function explain(error) {
    var code = error && (error.code !== undefined ? error.code : error.data && error.data.code);
    var message = String((error && error.message) || "").toLowerCase();
    if (code === 4001 || message.indexOf("user rejected") >= 0 || message.indexOf("user denied") >= 0) {
      return text.rejected;
    }
    if (code === 4100) return text.unauthorized;
    if (code === 4900 || code === 4901 || message.indexOf("disconnected") >= 0) return text.gone;
    if (code === -32002) return text.pending;
    if (message.indexOf("insufficient funds") >= 0) return fill(text.gas, pay);
    return fill(text.failed, {reason: (error && error.message) || String(error)});
  }

  async function ask(provider, method, params) {
    if (!provider || typeof provider.request !== "function") {
      throw {code: 4900, message: "disconnected"};
    }
    return provider.request(params === undefined ? {method: method} : {method: method, params: params});
  }

  async function onChain(provider) {
    var current = parseInt(await ask(provider, "eth_chainId"), 16);
    if (current === pay.chainId) return;
    say(fill(text.switching, pay));
    try {
      await ask(provider, "wallet_switchEthereumChain", [{chainId: hex(pay.chainId)}]);
    } catch (error) {
      var code = error && (error.code !== undefined ? error.code : error.data && error.data.originalError && error.data.originalError.code);
      if (code !== 4902) throw error;
      if (!pay.addChain) throw {message: fill(text.unknownChain, pay), plain: true};
      say(fill(text.adding, pay));
      await ask(provider, "wallet_addEthereumChain", [pay.addChain]);
    }
    current = parseInt(await ask(provider, "eth_chainId"), 16);
    if (current !== pay.chainId) throw {message: fill(text.wrongChain, pay), plain: true};
  }

  async function owed() {
    // What the checkout still waits for, now: a part may have arrived since the page was drawn.
    var response = await fetch(pay.statusUrl, {headers: {Accept: "application/json"}, cache: "no-cache"});
    var data = await response.json();
    if (pay.plainStatus) {
      // The dashboard's refund funding answers `{remaining}`: null once nothing more is awaited.
      return data.remaining === null || data.remaining === undefined ? null : BigInt(data.remaining);
    }
    if (data.session.status !== "open" || !data.order || data.order.status !== pay.waitingStatus) {
      return null;
    }
    return BigInt(data.order.remaining);
  }

  async function ready(wallet) {
    // Connect, move to the payment's chain, read what is owed now and check the balance: {account, amount},
    // or null (said why) when there is nothing to pay or not enough to pay it.
    var provider = wallet.provider;
    say(fill(text.connecting, {wallet: wallet.info.name}));
    var accounts = await ask(provider, "eth_requestAccounts");
    if (!accounts || !accounts.length) throw {code: 4100};
    var account = accounts[0];
    await onChain(provider);
    var amount = await owed();
    if (amount === null || amount <= 0n) {
      say(text.nothingOwed);
      return null;
    }
    var balance = pay.native
      ? BigInt(await ask(provider, "eth_getBalance", [account, "latest"]))
      : BigInt(await ask(provider, "eth_call", [{to: pay.token, data: "0x70a08231" + word(account)}, "latest"]));
    if (balance < amount) {
      say(fill(text.balance, {have: units(balance), need: units(amount), symbol: pay.symbol}), true);
      return null;
    }
    return {account: account, amount: amount};
  }

  async function payWith(wallet) {
    if (busy) return;
    busy = true;
    var provider = wallet.provider;
    try {
      var payment = await ready(wallet);
      if (!payment) return;
      var account = payment.account, amount = payment.amount;
      var tx = pay.native
        ? {from: account, to: pay.deposit, value: hex(amount)}
        : {from: account, to: pay.token, value: "0x0", data: "0xa9059cbb" + word(pay.deposit) + word(amount)};
      say(fill(text.confirm, {wallet: wallet.info.name}));
      var hash = await ask(provider, "eth_sendTransaction", [tx]);
      try {
        sessionStorage.setItem(TX_KEY, hash);
      } catch (ignored) { /* private mode: the hash is still shown */ }
      showSent(hash);
      say(text.sent);
    } catch (error) {
      say(error && error.plain ? error.message : explain(error), true);
    } finally {
      busy = false;
    }
  }

  function nonce() {
    var bytes = new Uint8Array(32);
    window.crypto.getRandomValues(bytes);
    return "0x" + Array.prototype.map.call(bytes, function (b) { return b.toString(16).padStart(2, "0"); }).join("");
  }

  async function signWith(wallet) {
    // Pay by signature: the wallet signs an EIP-3009 authorization of what is owed to the deposit address;
    // the service submits it and pays the gas.
    if (busy) return;
    busy = true;
    var provider = wallet.provider;
    try {
      var payment = await ready(wallet);
      if (!payment) return;
      var account = payment.account, amount = payment.amount;
      var authorization = {
        from: account,
        to: pay.deposit,
        value: amount.toString(),
        validAfter: "0",
        validBefore: String(Math.floor(Date.now() / 1000) + pay.signature.validSeconds),
        nonce: nonce(),
      };
      var typed = {
        types: {
          EIP712Domain: [
            {name: "name", type: "string"}, {name: "version", type: "string"},
            {name: "chainId", type: "uint256"}, {name: "verifyingContract", type: "address"},
          ],
          TransferWithAuthorization: [
            {name: "from", type: "address"}, {name: "to", type: "address"}, {name: "value", type: "uint256"},
            {name: "validAfter", type: "uint256"}, {name: "validBefore", type: "uint256"},
            {name: "nonce", type: "bytes32"},
          ],
        },
        primaryType: "TransferWithAuthorization",
        domain: {name: pay.signature.name, version: pay.signature.version, chainId: pay.chainId, verifyingContract: pay.token},
        message: authorization,
      };
      say(fill(text.signConfirm, {wallet: wallet.info.name}));
      var signature = await ask(provider, "eth_signTypedData_v4", [account, JSON.stringify(typed)]);
      say(text.signSent);
      var response = await fetch(pay.signature.url, {
        method: "POST",
        headers: {"Content-Type": "application/json", Accept: "application/json"},
        body: JSON.stringify({authorization: authorization, signature: signature}),
      });
      var answer = await response.json();
      if (!response.ok) {
        say(fill(text.signFailed, {reason: answer.error || response.status}), true);
        return;
      }
      if (answer.transaction) {
        try {
          sessionStorage.setItem(TX_KEY, answer.transaction);
        } catch (ignored) { /* private mode: the hash is still shown */ }
        showSent(answer.transaction);
      }
      say(text.signSent);
    } catch (error) {
      say(error && error.plain ? error.message : explain(error), true);
    } finally {
      busy = false;
    }
  }

  function button(wallet, label, action) {
    var element = document.createElement("button");
    element.type = "button";
    element.className = "wallet";
    if (wallet.info.icon && /^data:image\//.test(wallet.info.icon)) {
      var icon = document.createElement("img");
      icon.src = wallet.info.icon;
      icon.alt = "";
      element.appendChild(icon);
    }
    element.appendChild(document.createTextNode(fill(label, {wallet: wallet.info.name})));
    element.addEventListener("click", function () { action(wallet); });
    return element;
  }

  function draw() {
    list.textContent = "";
    wallets.forEach(function (wallet) {
      list.appendChild(button(wallet, text.payWith, payWith));
      if (pay.signature && !pay.native) list.appendChild(button(wallet, text.signWith, signWith));
    });
    panel.hidden = wallets.length === 0;
  }

  function add(info, provider) {
    if (!info || !provider || typeof provider.request !== "function") return;
    if (wallets.some(function (known) { return known.info.uuid === info.uuid || known.provider === provider; })) return;
    var name = String(info.name || text.browserWallet).slice(0, 40);
    wallets.push({info: {uuid: String(info.uuid || name), name: name, icon: String(info.icon || "")}, provider: provider});
    if (typeof provider.on === "function") {
      provider.on("disconnect", function () { say(text.gone, true); });
    }
    draw();
  }

  window.addEventListener("eip6963:announceProvider", function (event) {
    var detail = event.detail || {};
    add(detail.info, detail.provider);
  });
  window.dispatchEvent(new Event("eip6963:requestProvider"));
  setTimeout(function () {
    // A wallet that predates EIP-6963 only sets window.ethereum.
    if (!wallets.length && window.ethereum) add({uuid: "injected", name: text.browserWallet}, window.ethereum);
  }, 250);

  var earlier = null;
  try {
    earlier = sessionStorage.getItem(TX_KEY);
  } catch (ignored) { /* no storage */ }
  if (earlier) {
    showSent(earlier);
  }
})();
