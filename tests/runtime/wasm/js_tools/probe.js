// A JavaScript tool that reads files and the user's notes through the toolcage:tool world.
import { readFile, listDir } from 'toolcage:tool/fs@0.1.0';
import { call } from 'toolcage:tool/memory@0.1.0';
import { write } from 'toolcage:tool/log@0.1.0';
import { shout } from './helper.js';

function refused(action) {
  try {
    return action();
  } catch (error) {
    return `refused: ${error.payload ?? error}`;
  }
}

export function run({ op, path = '' }) {
  switch (op) {
    case 'read':
      return refused(() => new TextDecoder().decode(readFile(path, 1000)));
    case 'list':
      return refused(() => listDir(path));
    case 'note':
      return JSON.parse(call('save', JSON.stringify({ content: path })));
    case 'notes':
      return JSON.parse(call('search', JSON.stringify({ query: path })));
    case 'shout':
      write('warning', 'the probe shouts');
      return shout(path);
    case 'spin':
      for (;;) {} // stopped by the call's deadline
    case 'hog':
      return new Array(1 << 30).fill(1).length; // stopped by the memory limit
    default:
      throw new RangeError(`no such op ${JSON.stringify(op)}`);
  }
}
